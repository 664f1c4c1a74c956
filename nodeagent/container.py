"""``--container=<bundle>``: a step's tasks run in an OCI container, as oci.conf says (issue 14 item 8).

Slurm 22.05 reads ``oci.conf`` beside slurm.conf; without it ``--container`` changes nothing
but SLURM_CONTAINER (observed on the anchor; tests/tools/reference/options_rest).  With it,
each task runs through the OCI runtime the site names: plurm supports the one-command form,
``RunTimeRun=`` (crun's and runc's ``run --bundle``), with Slurm's pattern replacements

    %% %  %@ the task's command  %b the generated bundle  %e its environment file
    %j job  %s step  %t task  %n node  %u user  %U uid  %m the step's spool  %r the bundle's rootfs

For each task the bundle's config.json is copied into a directory of its own under the step's
spool (ContainerPath= overrides where) with ``process.args`` the task's command, ``process.env``
the task's environment, ``process.cwd`` the step's directory when the rootfs has it, and
``root.path`` made absolute.  The runtime runs as the job's owner, like any task (a rootless
runtime for users, e.g. ``--rootless=true --root=/run/user/%U/``).

RunTimeCreate/RunTimeStart (the split form) is not supported: plurmd says so in its log and
``--container`` steps fail to launch with slurmstepd's words, never running uncontained.
Only srun's steps are containerised here; a batch script itself runs on the node as usual.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
from typing import Any

log = logging.getLogger("plurmd")

_KEYS = ("containerpath", "createenvfile", "runtimerun", "runtimecreate", "runtimestart", "runtimequery",
         "runtimekill", "runtimedelete", "runtimeenvexclude", "debugflags")


class ContainerError(Exception):
    """The task cannot run in its container: the words slurmstepd's error line carries."""


def load_oci_conf(conf_dir: str) -> dict[str, str] | None:
    """oci.conf beside slurm.conf as ``{lower-case key: value}``; None when there is none.
    A line that is not KEY=VALUE, or an unknown key, is logged and skipped."""
    path = os.path.join(conf_dir, "oci.conf")
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.error("oci.conf: cannot read %s: %s", path, exc)
        return None
    conf: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        key, eq, value = line.partition("=")
        key = key.strip().lower()
        if not eq or key not in _KEYS:
            log.error("oci.conf:%d: skipped (not a known KEY=VALUE): %s", number, raw[:200])
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        conf[key] = value
    if "runtimerun" not in conf:
        log.error("oci.conf: only RunTimeRun= is supported; --container steps will fail to launch")
    return conf


def _expand(pattern: str, values: dict[str, str]) -> list[str]:
    """The pattern's words with Slurm's %-replacements (%@: the command, as separate words)."""
    words = []
    for word in shlex.split(pattern):
        if word == "%@":
            words.extend(shlex.split(values["@"]))
            continue
        out, i = [], 0
        while i < len(word):
            if word[i] == "%" and i + 1 < len(word):
                out.append(values.get(word[i + 1], word[i:i + 2]))
                i += 2
            else:
                out.append(word[i])
                i += 1
        words.append("".join(out))
    return words


MAX_CONFIG_BYTES = 1 << 20  # a bundle's config.json is read by plurmstepd: bounded


def _readable_by(path: str, uid: int, gids: tuple[int, ...]) -> bool:
    """Whether the job's owner may read ``path`` (plurmstepd reads it as root: the owner's
    bundle only, never a file the owner could not read)."""
    st = os.stat(path)
    if uid == 0:
        return True
    if st.st_uid == uid:
        return bool(st.st_mode & 0o400)
    if st.st_gid in gids:
        return bool(st.st_mode & 0o040)
    return bool(st.st_mode & 0o004)


def task_argv(conf: dict[str, str], argv: list[str], env: dict[str, str], *, bundle: str, work_dir: str,
              spool: str, job_id: int, step_id: int, task_id: int, node: str, user: str, uid: int,
              gids: tuple[int, ...] = ()) -> list[str]:
    """The command that runs ``argv`` in ``bundle`` through the site's runtime; writes the
    task's own bundle (config.json) first.  ContainerError when it cannot."""
    run = conf.get("runtimerun")
    if not run:
        raise ContainerError("oci.conf: RunTimeRun is not set (the only form plurm runs)")
    bundle = os.path.abspath(bundle)
    path = os.path.join(bundle, "config.json")
    try:
        if not _readable_by(path, uid, gids):
            raise PermissionError("Permission denied")
        with open(path, encoding="utf-8") as fh:
            text = fh.read(MAX_CONFIG_BYTES + 1)
        if len(text) > MAX_CONFIG_BYTES:
            raise ValueError("larger than 1 MiB")
        config: dict[str, Any] = json.loads(text)
    except (OSError, ValueError) as exc:
        log.info("job %s step %s: --container=%s refused: %s", job_id, step_id, bundle, exc)
        raise ContainerError(f"unable to load {bundle}/config.json: {exc}") from None
    if not isinstance(config, dict):
        raise ContainerError(f"unable to load {bundle}/config.json: not an object")
    root = config.get("root") if isinstance(config.get("root"), dict) else {}
    rootfs = os.path.join(bundle, str(root.get("path") or "rootfs"))
    base = conf.get("containerpath") or os.path.join(spool, f"oci-job{job_id}-{step_id}")
    own = os.path.join(base, f"task-{task_id}")
    os.makedirs(own, mode=0o700, exist_ok=True)
    process = config.get("process") if isinstance(config.get("process"), dict) else {}
    process["args"] = list(argv)
    process["env"] = [f"{k}={v}" for k, v in env.items() if "\n" not in k]
    if os.path.isdir(os.path.join(rootfs, work_dir.lstrip("/"))):
        process["cwd"] = work_dir
    process["terminal"] = False  # the task's I/O is plurmstepd's pipes
    config["process"] = process
    config["root"] = dict(root, path=rootfs)
    with open(os.path.join(own, "config.json"), "w", encoding="utf-8") as fh:
        json.dump(config, fh)
    if os.geteuid() == 0 and uid != 0:  # the runtime runs as the owner: its bundle is the owner's
        for path in (base, own, os.path.join(own, "config.json")):
            os.chown(path, uid, -1)
    env_file = os.path.join(own, "environment")
    if conf.get("createenvfile", "disabled").lower() in ("null", "true", "newline"):
        sep = "\n" if conf["createenvfile"].lower() == "newline" else "\0"
        with open(env_file, "w", encoding="utf-8") as fh:
            fh.write("".join(f"{k}={v}{sep}" for k, v in env.items() if sep != "\n" or "\n" not in v))
    values = {"%": "%", "@": shlex.join(argv), "b": own, "e": env_file, "j": str(job_id), "s": str(step_id),
              "t": str(task_id), "n": node, "u": user, "U": str(uid), "m": base, "r": rootfs}
    return _expand(run, values)
