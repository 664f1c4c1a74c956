"""``job/submit``'s ``job_desc_msg`` as the job spec sbatch would send for the same request.

The description is turned into sbatch's command line (``name`` -> ``--job-name``,
``time_limit`` -> ``--time``, ...) and parsed by sbatch's own parser together with the
script's ``#SBATCH`` lines (tools/sbatch_cli.py), then built by sbatch's spec builder
(tools/jobspec.py): one meaning for an option, whichever way it arrives, and the same
errors.  Fields this module does not know, and fields it knows but plurm does not act on
yet, come back as ``warnings`` of the response, never silently.

Not taken from the request: who the job belongs to.  That is the token's user, decided by
the controller (``user_id``/``group_id`` become ``--uid``/``--gid``, which the controller
allows root and SlurmUser alone, as sbatch's).
"""

from __future__ import annotations

import pwd
import time
from typing import Any


class JobDescError(Exception):
    """A description that cannot become a job: ``lines`` are sbatch's words for it."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("; ".join(lines))
        self.lines = lines


# job_desc field -> sbatch long option, for the fields whose value is the option's text.
_TEXT = {"name": "job-name", "partition": "partition", "account": "account", "qos": "qos", "comment": "comment",
         "constraints": "constraint", "dependency": "dependency", "array": "array", "licenses": "licenses",
         "reservation": "reservation", "standard_output": "output", "standard_error": "error",
         "standard_input": "input", "current_working_directory": "chdir", "nodes": "nodes",
         "user_id": "uid", "group_id": "gid", "mail_user": "mail-user", "exclude_nodes": "exclude",
         "required_nodes": "nodelist", "wckey": "wckey", "cluster_constraint": "cluster-constraint"}
_INT = {"tasks": "ntasks", "cpus_per_task": "cpus-per-task", "tasks_per_node": "ntasks-per-node", "nice": "nice"}
_NO_VAL = {"memory_per_node": "mem", "memory_per_cpu": "mem-per-cpu", "priority": "priority"}
_HANDLED = set(_TEXT) | set(_INT) | set(_NO_VAL) | {
    "script", "environment", "time_limit", "hold", "requeue", "begin_time", "argv", "minimum_nodes",
    "maximum_nodes", "tres_per_node", "flags", "admin_comment", "shared"}
# job_desc ``shared`` words -> sbatch's option (slurm-bridge sends ["none"] for an exclusive pod group).
_SHARED = {"none": "--exclusive", "user": "--exclusive=user", "oversubscribe": "--oversubscribe"}


def _no_val(value: Any) -> tuple[bool, int | None]:
    """(infinite, number) of a ``*_no_val_struct`` or a plain number; (False, None) when unset."""
    if isinstance(value, bool):
        raise JobDescError([f"expected a number, got {value!r}"])
    if isinstance(value, (int, float)):
        return False, int(value)
    if isinstance(value, dict):
        if value.get("infinite"):
            return True, None
        if value.get("set", "number" in value):
            number = value.get("number")
            if isinstance(number, (int, float)) and not isinstance(number, bool):
                return False, int(number)
            raise JobDescError([f"expected a number, got {number!r}"])
        return False, None
    raise JobDescError([f"expected a number, got {value!r}"])


def argv_of(desc: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(sbatch arguments, warnings) for a description."""
    args: list[str] = []
    warnings: list[str] = []
    for key, option in _TEXT.items():
        value = desc.get(key)
        if isinstance(value, list):  # (a csv_string: [] or [""] is no value, as a missing field)
            value = ",".join(str(v) for v in value if v != "")
        if value is None or value == "":
            continue
        if not isinstance(value, (str, int)) or isinstance(value, bool):
            raise JobDescError([f"{key}: expected a string, got {value!r}"])
        args.append(f"--{option}={value}")
    if "nodes" not in desc and desc.get("minimum_nodes"):
        low, high = desc.get("minimum_nodes"), desc.get("maximum_nodes")
        args.append(f"--nodes={low}-{high}" if high else f"--nodes={low}")
    for key, option in _INT.items():
        value = desc.get(key)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool):
            raise JobDescError([f"{key}: expected an integer, got {value!r}"])
        args.append(f"--{option}={value}")
    for key, option in _NO_VAL.items():
        if key in desc:
            infinite, number = _no_val(desc[key])
            if number is not None:
                args.append(f"--{option}={number}")
    if "time_limit" in desc:
        infinite, minutes = _no_val(desc["time_limit"])
        if infinite:
            args.append("--time=UNLIMITED")
        elif minutes is not None:
            args.append(f"--time={minutes}")
    if "begin_time" in desc:
        _, when = _no_val(desc["begin_time"])
        if when:
            args.append("--begin=" + time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(when)))
    if desc.get("hold") is True:
        args.append("--hold")
    if desc.get("requeue") is not None:
        args.append("--requeue" if desc["requeue"] else "--no-requeue")
    tres = desc.get("tres_per_node")
    if isinstance(tres, str) and tres:
        args.append("--gres=" + ",".join(t.removeprefix("gres/") for t in tres.split(",")))
    for word in word_list(desc, "shared"):
        if word.lower() in _SHARED:
            args.append(_SHARED[word.lower()])
        else:
            warnings.append(f"job_desc shared {word} is not acted on by plurm (ignored)")
    for flag in sorted(set(word_list(desc, "flags")) - {"EXTERNAL_JOB"}):
        warnings.append(f"job_desc flag {flag} is not acted on by plurm (ignored)")
    for key in sorted(set(desc) - _HANDLED):
        if desc[key] not in (None, "", [], {}, False):
            warnings.append(f"job_desc field {key} is not acted on by plurm (ignored)")
    return args, warnings


def word_list(desc: dict[str, Any], key: str) -> list[str]:
    """A field the spec gives as a list of enum words (``flags``, ``shared``); one word alone
    is taken as slurmrestd does.  Anything else is the caller's mistake (400), not ours."""
    value = desc.get(key) or []
    words = [value] if isinstance(value, str) else value
    if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
        raise JobDescError([f"job_desc {key} must be a list of strings"])
    return words


def environment_of(desc: dict[str, Any]) -> dict[str, str]:
    env = desc.get("environment") or []
    if isinstance(env, dict):  # (some clients send an object)
        return {str(k): str(v) for k, v in env.items()}
    if not isinstance(env, list):
        raise JobDescError(["environment: expected a list of NAME=value strings"])
    out: dict[str, str] = {}
    for item in env:
        if not isinstance(item, str) or "=" not in item:
            raise JobDescError([f"environment: {item!r} is not NAME=value"])
        name, _, value = item.partition("=")
        out[name] = value
    return out


def _home(user: str) -> str:
    try:
        return pwd.getpwnam(user).pw_dir or "/"
    except KeyError:
        return "/"


def submit_body(request: dict[str, Any], user_hint: str) -> tuple[dict[str, Any], list[str]]:
    """(the controller's submit_job body, warnings) for a ``job_submit_req``.

    ``user_hint`` (the name the request came with) only picks the default working directory
    (the user's home, as the job's owner would have); it decides nothing else."""
    from plurm.grammar.options import OptionError
    from plurm.tools.jobspec import build_spec, not_acted_on
    from plurm.tools.sbatch_cli import parse_sbatch

    if not isinstance(request, dict):
        raise JobDescError(["the request body must be a job_submit_req object"])
    if request.get("jobs"):
        raise JobDescError(["heterogeneous jobs (\"jobs\") are not supported by plurmrestd yet"])
    desc = request.get("job")
    if not isinstance(desc, dict):
        raise JobDescError(["the request has no \"job\" object"])
    script = desc.get("script") or request.get("script")
    external = "EXTERNAL_JOB" in word_list(desc, "flags")
    if external and not script:  # allocated, never launched (core_external.py): no script to run
        script = "#!/bin/sh\n"
    if not isinstance(script, str) or not script.strip():
        raise JobDescError(["sbatch: error: Batch script is empty!"])
    args, warnings = argv_of(desc)
    if "current_working_directory" not in desc:
        args.append(f"--chdir={_home(user_hint)}")
    environ = environment_of(desc)
    try:
        req = parse_sbatch(args, {}, script.encode())
    except OptionError as exc:
        raise JobDescError(list(exc.lines)) from None
    if not hasattr(req, "options"):  # --help, --usage, --version: not a job
        raise JobDescError(["not a job submission"])
    job_argv = desc.get("argv") or []
    spec = build_spec(req.options, default_name=desc.get("name") or "sbatch", environ=environ, batch=not external,
                      script=None if external else req.script_text, script_args=[str(a) for a in job_argv[1:]],
                      raw_options=req.raw_options)
    if external:
        spec["external"] = True
    if desc.get("admin_comment"):  # (the controller allows operators alone: core_external.py)
        spec["admin_comment"] = str(desc["admin_comment"])
    warnings.extend(req.warnings)
    ignored = sorted(not_acted_on(spec))
    if ignored:
        warnings.append("plurm accepts but does not act on " + ", ".join("--" + k for k in ignored) + " yet")
    return {"spec": spec, "test_only": False}, warnings
