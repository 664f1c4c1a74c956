"""The job kinds of the environment comparison, run the same way on the real Slurm and on plurm.

One driver for both sides (the differential-test shape: one body, two implementations):
``capture.py`` runs it against the real Slurm 22.05 and stores what every job saw in
``slurm-22.05.json``; tests/integration/test_job_env_differential.py runs it against a plurm
cluster shaped like the anchor's and compares.  Standard library only: the capture runs
where plurm need not be importable.

Every job dumps its whole environment with ``env -0`` into a file of the submit directory;
the commands are submitted from a pared-down environment (``env -i`` plus the few variables a
login shell has, a marker and a variable that --export lists leave out), so that what differs
is what the workload manager added or removed, not what the caller happened to have.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

# A batch script: its environment into OUT (OUT.<task id> for an array task).
JOB_SH = """#!/bin/bash
out="$1"
[ -n "$SLURM_ARRAY_TASK_ID" ] && out="$out.$SLURM_ARRAY_TASK_ID"
/usr/bin/env -0 > "$out.tmp" && /bin/mv "$out.tmp" "$out"
"""
# A task (srun) or salloc's command: OUT.<rank>, OUT.none where there is no rank.
TASK_SH = """#!/bin/bash
out="$1.${SLURM_PROCID:-none}"
/usr/bin/env -0 > "$out.tmp" && /bin/mv "$out.tmp" "$out"
"""
# A batch script with one step of two tasks ({task}: the task script; the batch script itself
# runs from a copy in the node's spool, so it cannot find it beside itself).
STEP_SH = """#!/bin/bash
srun -n2 {task} "$1"
"""


@dataclass(frozen=True)
class Kind:
    name: str
    argv: tuple[str, ...]      # the command; {job} {task} {step} are the scripts, {out} the dump, {dep} a job id
    files: tuple[str, ...]     # the suffixes of the dumps it leaves ("" is OUT itself)
    needs_dependency: bool = False


KINDS: tuple[Kind, ...] = (
    Kind("batch", ("sbatch", "{job}", "{out}"), ("",)),
    Kind("nodes2_tasks4", ("sbatch", "-N2", "-n4", "{job}", "{out}"), ("",)),
    Kind("array", ("sbatch", "--array=1-5:2", "{job}", "{out}"), (".1", ".3", ".5")),
    Kind("dependency", ("sbatch", "--dependency=afterok:{dep}", "{job}", "{out}"), ("",), needs_dependency=True),
    Kind("export_none", ("sbatch", "--export=NONE", "{job}", "{out}"), ("",)),
    Kind("export_all", ("sbatch", "--export=ALL", "{job}", "{out}"), ("",)),
    Kind("export_var", ("sbatch", "--export=MARK=x", "{job}", "{out}"), ("",)),
    Kind("export_all_var", ("sbatch", "--export=ALL,MARK=x", "{job}", "{out}"), ("",)),
    Kind("gres_gpu1", ("sbatch", "--gres=gpu:1", "{job}", "{out}"), ("",)),
    Kind("gpus1", ("sbatch", "--gpus=1", "{job}", "{out}"), ("",)),
    Kind("batch_step", ("sbatch", "-n2", "{step}", "{out}"), (".0", ".1")),
    Kind("salloc", ("salloc", "-N1", "{task}", "{out}"), (".none",)),
    Kind("salloc_srun", ("salloc", "-n2", "srun", "{task}", "{out}"), (".0", ".1")),
    Kind("srun", ("srun", "-n2", "{task}", "{out}"), (".0", ".1")),
    Kind("srun_gpu", ("srun", "--gres=gpu:1", "{task}", "{out}"), (".0",)),
    Kind("srun_nodes2", ("srun", "-N2", "-n4", "{task}", "{out}"),
         (".0", ".1", ".2", ".3")),
    Kind("batch_opts", ("sbatch", "-J", "named", "-c2", "--mem=500", "--ntasks-per-node=1", "-N2", "{job}", "{out}"),
         ("",)),
)


def submit_environment(path: str, conf: str) -> dict[str, str]:
    """What a user's login shell would hand the commands: the same on both sides."""
    return {
        "PATH": path, "HOME": "/root" if os.getuid() == 0 else os.environ.get("HOME", "/"),
        "USER": _user(), "LOGNAME": _user(), "SHELL": "/bin/bash", "LANG": "C.UTF-8", "TERM": "dumb",
        "MARK": "submitted", "OTHER": "kept", "SLURM_CONF": conf,
    }


def _user() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name


def read_dump(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in path.read_bytes().split(b"\0"):
        if item:
            name, _, value = item.decode("utf-8", "replace").partition("=")
            out[name] = value
    return dict(sorted(out.items()))


_JOB_ID = re.compile(r"(?:Submitted batch job |job allocation |^)(\d+)\s*$", re.M)


def run_kinds(work: Path, env: dict[str, str], timeout: float = 120.0,
              only: tuple[str, ...] | None = None) -> dict[str, dict]:
    """Run every kind from ``work`` (the submit dir); {kind: {"job_ids": [...], "dumps": {suffix: env}}}."""
    work.mkdir(parents=True, exist_ok=True)
    scripts = {}
    for name, body in (("job", JOB_SH), ("task", TASK_SH), ("step", STEP_SH)):
        path = work / f"{name}.sh"
        path.write_text(body.replace("{task}", str(work / "task.sh")))
        path.chmod(0o755)
        scripts[name] = str(path)
    results: dict[str, dict] = {}
    for kind in KINDS:
        if only is not None and kind.name not in only:
            continue
        out = work / kind.name
        dep = ""
        if kind.needs_dependency:
            # A short job the dependent one waits for (it completes, so afterok holds).
            proc = subprocess.run(["sbatch", "--parsable", "-o", "/dev/null", "--wrap", "true"], cwd=work,
                                  env=env, capture_output=True, text=True, timeout=60, umask=0o022)
            dep = proc.stdout.strip().split(";")[0]
        argv = [a.format(job=scripts["job"], task=scripts["task"], step=scripts["step"], out=str(out), dep=dep)
                for a in kind.argv]
        # umask 022 on both sides: srun passes it on (SLURM_UMASK).
        proc = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=timeout,
                              umask=0o022)
        if proc.returncode != 0:
            raise RuntimeError(f"{kind.name}: {argv} exited {proc.returncode}: {proc.stdout}{proc.stderr}")
        ids = [int(m) for m in _JOB_ID.findall(proc.stdout + proc.stderr)]
        dumps = _wait_dumps(out, kind.files, timeout)
        results[kind.name] = {"job_ids": ids, "dependency": int(dep) if dep else None, "dumps": dumps}
    return results


def _wait_dumps(out: Path, suffixes: tuple[str, ...], timeout: float) -> dict[str, dict[str, str]]:
    deadline = time.monotonic() + timeout
    paths = {s: Path(f"{out}{s}") for s in suffixes}
    while not all(p.exists() for p in paths.values()):
        if time.monotonic() > deadline:
            missing = [str(p) for p in paths.values() if not p.exists()]
            raise RuntimeError(f"no environment dump after {timeout}s: {missing}")
        time.sleep(0.1)
    return {s: read_dump(p) for s, p in paths.items()}


# ----------------------------------------------------------------- normalising what is host-specific
# Values that change with every run (pids, ports): only their presence is compared.
VOLATILE = frozenset({"SLURM_TASK_PID", "SLURM_SRUN_COMM_PORT", "SLURM_STEP_LAUNCHER_PORT"})
# Variables that hold job ids.
JOB_ID_VARIABLES = frozenset({"SLURM_JOB_ID", "SLURM_JOBID", "SLURM_ARRAY_JOB_ID", "SLURM_JOB_DEPENDENCY"})
# Variables that hold node names or hostlists: which nodes a job gets depends on what else runs.
NODE_VARIABLES = frozenset({"SLURMD_NODENAME", "HOSTNAME", "SLURM_TOPOLOGY_ADDR", "SLURM_JOB_NODELIST",
                            "SLURM_NODELIST", "SLURM_STEP_NODELIST"})
_HOSTLIST = re.compile(r"([A-Za-z]+)(?:\[([0-9,\-]+)\]|([0-9]+))")


def expand_nodes(text: str) -> list[str]:
    """n[1-2],n4 -> [n1, n2, n4] (enough of the hostlist syntax for these node names)."""
    names: list[str] = []
    for prefix, ranges, single in _HOSTLIST.findall(text):
        if single:
            names.append(prefix + single)
            continue
        for part in ranges.split(","):
            lo, _, hi = part.partition("-")
            names.extend(f"{prefix}{i}" for i in range(int(lo), int(hi or lo) + 1))
    return names


def normalise(kind: str, dump: dict[str, str], facts: dict[str, str], submitted: list[int],
              dependency: int | None) -> dict[str, str]:
    """A dump with the host- and run-specific parts replaced by <placeholders>.

    facts: "host" (this machine's hostname), "submit_dir", "conf" (SLURM_CONF), "ctld_port",
    "path_prefix" (what the caller put in front of PATH to find its commands), "uid", "gid",
    "user", "home", "login" (login_environment) and "submitted" (submit_environment).
    """
    order = expand_nodes(dump.get("SLURM_JOB_NODELIST", ""))
    out: dict[str, str] = {}
    dump = _login_part(dump, facts)
    for name, value in dump.items():
        if value.startswith("<LOGIN"):
            pass
        elif name in VOLATILE:
            value = "<*>"
        elif name in JOB_ID_VARIABLES:
            value = _job_ids(name, value, kind, submitted, dependency)
        elif name in NODE_VARIABLES and (name != "HOSTNAME" or value != facts["host"]):
            value = ",".join(f"<N{order.index(n)}>" if n in order else n for n in expand_nodes(value))
        else:
            if facts["submit_dir"]:
                value = value.replace(facts["submit_dir"], "<SUBMIT_DIR>")
            if name == "PATH" and facts.get("path_prefix") and value.startswith(facts["path_prefix"]):
                value = value[len(facts["path_prefix"]):]
            if name == "SLURM_CONF" and value == facts["conf"]:
                value = "<CONF>"
            if name in ("SLURM_SUBMIT_HOST", "HOSTNAME") and value == facts["host"]:
                value = "<HOST>"
            if name == "SLURM_WORKING_CLUSTER":
                value = value.replace(f":{facts['ctld_port']}:", ":<PORT>:")
            if name in USER_VARIABLES and value == facts[USER_VARIABLES[name]]:
                value = f"<{USER_VARIABLES[name].upper()}>"
        out[name] = value
    return out


# Who ran the jobs: the capture ran as root, a test may not.
USER_VARIABLES = {"SLURM_JOB_UID": "uid", "SLURM_JOB_GID": "gid", "SLURM_JOB_USER": "user", "USER": "user",
                  "LOGNAME": "user", "HOME": "home"}
# Of a login environment (--get-user-env), the names every login has; the rest (MAIL, a
# dotfile's PYENV_ROOT...) is the host's: present or not, only checked to be all there.
PORTABLE_LOGIN = frozenset({"HOME", "USER", "LOGNAME", "SHELL", "PATH"})
LOGIN_IGNORED = frozenset({"PWD", "OLDPWD", "_", "SHLVL"})


def login_environment(user: str) -> dict[str, str]:
    """The user's login environment on this host, as --get-user-env loads it (root: su -)."""
    argv = (["/bin/su", "-", user, "-c", "/usr/bin/env -0; :"] if os.getuid() == 0 else
            [os.environ.get("SHELL", "/bin/sh"), "-l", "-c", "/usr/bin/env -0; :"])
    raw = subprocess.run(argv, capture_output=True, timeout=30, stdin=subprocess.DEVNULL,
                         env={"PATH": "/usr/bin:/bin"}).stdout
    out = {}
    for item in raw.split(b"\0"):
        name, sep, value = item.decode("utf-8", "replace").partition("=")
        if sep and name not in LOGIN_IGNORED:
            out[name] = value
    return out


def _login_part(dump: dict[str, str], facts: dict) -> dict[str, str]:
    """A job that loaded the login environment: what came from it, as <LOGIN> placeholders."""
    if dump.get("SLURM_GET_USER_ENV") != "1":
        return dump
    login: dict[str, str] = facts["login"]
    submitted: dict[str, str] = facts["submitted"]
    out = dict(dump)
    missing = []
    for name, value in login.items():
        if name in submitted and out.get(name) == submitted[name]:
            continue  # the submitted value won, as it should: compared as any other
        if out.get(name) != value:
            missing.append(name)
        elif name in PORTABLE_LOGIN:
            out[name] = "<LOGIN>"
        else:
            del out[name]
    out["<login environment>"] = "complete" if not missing else "missing " + ",".join(sorted(missing))
    return out


def _job_ids(name: str, value: str, kind: str, submitted: list[int], dependency: int | None) -> str:
    def one(match: re.Match[str]) -> str:
        number = int(match.group(0))
        if dependency is not None and number == dependency:
            return "<DEP>"
        if name == "SLURM_ARRAY_JOB_ID":
            return "<ARRAY_JOB>" if submitted and number == submitted[0] else match.group(0)
        # An array task has an id of its own; srun prints none to match against.
        if kind == "array" or not submitted or number == submitted[0]:
            return "<JOB>"
        return match.group(0)

    return re.sub(r"\d+", one, value)
