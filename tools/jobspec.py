"""From parsed sbatch/srun/salloc options to the JobSpec the controller takes.

The options come from tools/sbatch_cli.py (long option name -> typed
value); the result is a plain dict with JobSpec's field names (see
wire/model.py), which the controller validates against the schema.
Plain dicts, because the commands must not import msgspec on their
start-up path.  Options plurm does not act on yet are kept, as given, in
``other_options`` so that `scontrol show job` can show them.
"""

from __future__ import annotations

import os
TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only (start-up cost)
    from typing import Any

# Options that become JobSpec fields (or shape the request) rather than other_options.
_HANDLED = {
    "job-name", "partition", "account", "qos", "nodes", "ntasks", "ntasks-per-node", "tasks-per-node",
    "cpus-per-task", "mem", "mem-per-cpu", "time", "exclusive", "nodelist", "exclude", "hold", "nice",
    "begin", "dependency", "requeue", "no-requeue", "chdir", "output", "error", "input", "open-mode",
    "export", "array", "comment", "wrap", "parsable", "test-only", "verbose", "quiet", "help", "usage",
    "version", "label", "pty", "overlap", "gres", "gpus", "gpus-per-node", "gpus-per-task", "cpus-per-gpu",
    "mem-per-gpu", "constraint", "contiguous", "oversubscribe", "signal",
}
# Issue 14: each area adds the options it acts on to its own line (one line each, no collisions).
_HANDLED |= {"reservation"}  # area: reservations
_HANDLED |= {"licenses"}  # area: licenses
_HANDLED |= {"mail-type", "mail-user"}  # area: mail
_HANDLED |= {"sockets-per-node", "cores-per-socket", "threads-per-core", "extra-node-info",  # area: topology
             "ntasks-per-core", "ntasks-per-socket", "ntasks-per-gpu", "hint", "mincpus", "core-spec",
             "thread-spec"}  # (tools/jobspec_topology.py; -S/--thread-spec: ignored as Slurm does)
_HANDLED |= {"cpu-bind", "distribution", "mem-bind", "gpu-bind", "gpus-per-socket", "gres-flags"}  # area: binding
_HANDLED |= {"time-min", "deadline", "priority", "prefer", "tmp", "overcommit", "spread-job", "use-min-nodes",
              "no-kill", "nodefile", "wait-all-nodes", "delay-boot"}  # area: timeprio
_HANDLED |= {"mpi"}  # area: mpi
_HANDLED |= {"het-group"}  # area: hetjob (srun --het-group: tools/srun_het.py; `:` and `#SBATCH hetjob` are no keys)
_HANDLED |= {"wait", "cpu-freq", "gpu-freq", "switches", "bb", "bbf", "container", "reboot", "clusters",  # area: rest
             "cluster-constraint", "network", "power", "context", "batch", "x11"}  # (tools/options_rest.py)
_HANDLED |= {"propagate", "export-file", "get-user-env"}  # area: options (tools/sbatch.py, tools/propagate.py)


def _export_environment(export: dict[str, Any] | None, environ: dict[str, str], batch: bool = True) -> dict[str, str]:
    """--export: ALL (default), NONE, NIL, or a list of names and NAME=value."""
    if not export:
        return dict(environ)
    mode = export.get("mode", "ALL")
    assignments = dict(export.get("assignments") or {})
    if mode == "ALL":
        env = dict(environ)
    elif mode in ("NONE", "NIL"):
        env = {}
    else:
        names = export.get("names") or []
        env = dict(environ) if "ALL" in names else {n: environ[n] for n in names if n in environ}
    env.update(assignments)
    names = export.get("names") or []
    if mode == "ALL" and not names:
        return env  # 22.05's sbatch names neither variable for the default
    # The --export value as given (a list's names and assignments in order, ALL first).
    listed = [f"{n}={assignments[n]}" if n in assignments else n for n in names]
    env["SLURM_EXPORT_ENV"] = ",".join((["ALL"] if mode == "ALL" else [] if mode == "list" else [mode]) + listed)
    if batch and mode != "NIL":
        env["SLURM_GET_USER_ENV"] = "1"  # the node loads the user's login environment (sbatch(1))
    return env


def build_spec(options: dict[str, Any], *, default_name: str, environ: dict[str, str], batch: bool,
               script: str | None = None, command: str | None = None, script_args: list[str] | None = None,
               raw_options: dict[str, Any] | None = None) -> dict[str, Any]:
    """``raw_options``: the values as the user wrote them (kept for the options not acted on)."""
    spec: dict[str, Any] = {"name": options.get("job-name") or default_name, "batch": batch}
    for option, field_name in (("partition", "partition"), ("account", "account"), ("qos", "qos"),
                               ("ntasks", "ntasks"), ("cpus-per-task", "cpus_per_task"),
                               ("mem", "mem_per_node"), ("mem-per-cpu", "mem_per_cpu"), ("nice", "nice"),
                               ("cpus-per-gpu", "cpus_per_gpu"), ("mem-per-gpu", "mem_per_gpu"),
                               ("output", "stdout"), ("error", "stderr"), ("input", "stdin"),
                               ("comment", "comment"), ("constraint", "constraint")):
        value = options.get(option)
        if value is not None and value is not True:
            spec[field_name] = value
    per_node = options.get("ntasks-per-node", options.get("tasks-per-node"))
    if isinstance(per_node, int):
        spec["ntasks_per_node"] = per_node
    nodes = options.get("nodes")
    if isinstance(nodes, (list, tuple)):
        spec["nodes_min"] = nodes[0]
        if len(nodes) > 1 and nodes[1] is not None:
            spec["nodes_max"] = nodes[1]
    elif isinstance(nodes, int):
        spec["nodes_min"] = spec["nodes_max"] = nodes
    if "time" in options:
        minutes = options["time"]
        if minutes is None or minutes == 0:
            spec["time_unlimited"] = True
        else:
            spec["time_limit"] = minutes
    if options.get("exclusive"):
        spec["exclusive"] = True
    if options.get("contiguous"):
        spec["contiguous"] = True
    if options.get("oversubscribe"):
        spec["oversubscribe"] = True
    for option, field_name in (("nodelist", "req_nodes"), ("exclude", "exc_nodes")):
        value = options.get(option)
        if value:
            spec[field_name] = list(value) if not isinstance(value, str) else [value]
    if options.get("hold"):
        spec["hold"] = True
    if isinstance(options.get("begin"), (int, float)):
        spec["begin_time"] = float(options["begin"])
    dep = options.get("dependency")
    if isinstance(dep, dict):
        spec["dependency"] = dep.get("spec")
    elif isinstance(dep, str):
        spec["dependency"] = dep
    signal = options.get("signal")
    if isinstance(signal, dict):  # --signal (grammar/structvalues.parse_signal): corescheduler/core_signals.py
        spec["signal"] = {"number": signal["number"], "seconds": signal["warn_seconds"],
                          "batch": bool(signal.get("batch_shell_only")),
                          "reservation": bool(signal.get("on_reservation_end"))}
    if options.get("no-requeue") or options.get("requeue"):
        spec["requeue"] = not options.get("no-requeue")
        spec["requeue_given"] = True
    open_mode = options.get("open-mode")
    if open_mode:
        spec["open_mode"] = open_mode.get("mode") if isinstance(open_mode, dict) else open_mode
    spec["work_dir"] = options.get("chdir") or os.getcwd()
    array = options.get("array")
    if isinstance(array, dict):
        spec["array_spec"] = array.get("spec")
        spec["array_indices"] = list(array.get("indices") or [])
        if array.get("max_running"):
            spec["array_max_running"] = array["max_running"]
    gres = []
    for key in ("gres", "gpus"):
        if key in options and options[key] is not None:
            gres.append(f"{key}={_gres_text(options[key])}")
    if gres:
        spec["gres"] = " ".join(gres)
    from plurm.common.gres import request_from_options

    gres_req = request_from_options(options)
    if gres_req:
        spec["gres_req"] = gres_req
    spec["environment"] = _export_environment(options.get("export"), environ, batch)
    # The job's files are created with the submitter's umask (as sbatch and srun send it).
    mask = os.umask(0o022)
    os.umask(mask)
    spec["environment"]["SLURM_UMASK"] = f"{mask:04o}"
    spec["submit_host"] = os.uname().nodename.split(".", 1)[0]  # (not `socket`: 3 ms of start-up)
    if script is not None:
        spec["script"] = script
    if command is not None:
        spec["command"] = command
    if script_args:
        spec["script_args"] = list(script_args)
    # area: reservations (its JobSpec fields below this line)
    if options.get("reservation"):
        spec["reservation"] = str(options["reservation"])
    # area: licenses (its JobSpec fields below this line)
    if isinstance(options.get("licenses"), str):  # checked by the controller, as slurmctld does
        spec["licenses"] = options["licenses"]
    # area: mail (its JobSpec fields below this line)
    mail = options.get("mail-type")
    if isinstance(mail, dict) and mail.get("types"):  # (grammar/structvalues.parse_mail_type)
        spec["mail_type"] = list(mail["types"])
    if isinstance(options.get("mail-user"), str) and options["mail-user"]:
        spec["mail_user"] = options["mail-user"]
    # area: topology (its JobSpec fields below this line)
    from plurm.tools.jobspec_topology import add_fields as _topology_fields

    _topology_fields(options, spec)  # sockets, cores, threads, --hint, --mincpus, --ntasks-per-core|socket|gpu
    # area: binding (its JobSpec fields below this line)
    if batch and any(options.get(k) for k in ("distribution", "mem-bind", "gpu-bind")):
        from plurm.common.taskbind import batch_env  # (only then: sbatch's start-up path)

        spec["environment"].update(batch_env(options))  # its steps' srun reads them (22.05.8)
    if options.get("gpus-per-socket"):  # on each of the --sockets-per-node sockets (sbatch_cli requires it)
        from plurm.common.taskbind import gpus_per_socket_request

        spec["gres_req"] = list(spec.get("gres_req") or []) + gpus_per_socket_request(
            str(options["gpus-per-socket"]), options.get("sockets-per-node"))
    if options.get("gres-flags"):  # (plurmd picks the job's CPUs near its GPUs: nodeagent/stepbind.py)
        spec["gres_flags"] = list(options["gres-flags"])
    # area: timeprio (its JobSpec fields below this line)
    from plurm.tools.jobspec_timeprio import timeprio_fields  # (tools/jobspec_timeprio.py)

    spec.update(timeprio_fields(options))
    # area: mpi (its JobSpec fields below this line)
    # area: hetjob (its JobSpec fields below this line)
    # area: rest (its JobSpec fields below this line)
    from plurm.tools.options_rest import job_variables, spec_fields  # (tools/options_rest.py)

    spec.update(spec_fields(options))  # --cpu-freq, --switches, --bb, --container, --reboot, --power, ...
    if batch:
        spec["environment"].update(job_variables("sbatch", options))
    raw = raw_options or {}
    other = {k: str(raw[k]) if k in raw else _raw(v) for k, v in options.items() if k not in _HANDLED}
    if other:
        spec["other_options"] = other
    return spec


# Options kept as given in ``other_options`` without a warning: those the controller or the node
# reads from there (uid, gid, wckey, acctg-freq, kill-on-invalid-dep), those the command itself
# acts on (quiet, verbose, ignore-pbs, job-name), and those Slurm has no effect for either
# without a plugin (profile, mcs-label). tests/tools/test_option_table.py: sbatch's
# "accepts but does not act on" list is empty; the mechanism stays for future options.
_KEPT_QUIETLY = {"wckey", "mcs-label", "acctg-freq", "profile", "quiet", "verbose", "ignore-pbs",
              "kill-on-invalid-dep", "uid", "gid", "job-name"}


def not_acted_on(spec: dict[str, Any]) -> list[str]:
    """The kept options whose effect plurm does not produce yet: warn about them once."""
    return sorted(k for k in spec.get("other_options", {}) if k not in _KEPT_QUIETLY)


def _gres_text(value: Any) -> str:
    """--gres/--gpus as Slurm shows them: "gpu:h200:2,shard:1", "3", "a100:2"."""
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if isinstance(item, dict):
            parts = [item.get("name"), item.get("type"), str(item.get("count", 1))]
            out.append(":".join(p for p in parts if p))
        else:
            out.append(str(item))
    return ",".join(out)


def _raw(value: Any) -> str:
    if isinstance(value, dict) and "spec" in value:
        return str(value["spec"])
    if isinstance(value, (list, tuple)):
        return ",".join(_raw(v) for v in value)
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items())
    return str(value)
