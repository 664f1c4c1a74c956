"""The options whose effect needs hardware or services a site may lack (issue 14, item 8).

``--cpu-freq``, ``--gpu-freq``, ``--switches``, ``--bb``/``--bbf``, ``--container``,
``--reboot``, ``-M/--clusters``, ``--cluster-constraint``, ``--network``, ``--power``,
``--context``, ``--batch`` and ``--x11``.  plurm does what the real Slurm 22.05 does on a
cluster without the matching plugin or hardware (no cpufreq in sysfs, no GPU clock control,
no switch topology, no burst buffer, no oci.conf, no federation, no SELinux, one cluster in
the accounting): each was run on the real one (tests/tools/reference/options_rest/, capture.py)
and this module gives the same messages, exit codes, job variables and ``scontrol show job``
fields.  What the controller refuses (``--batch``) is in corescheduler/core_rest.py; with an
oci.conf beside slurm.conf, srun's tasks of a ``--container`` job run in the bundle through
its RunTimeRun (nodeagent/container.py).

On the commands' start-up path: it imports nothing (the option table parsed the values).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only (start-up cost)
    from typing import Any

# How 22.05 spells the --cpu-freq words back (SLURM_CPU_FREQ_REQ, scontrol's CPU_*_freq).
_CPU_FREQ_NAMES = {"low": "Low", "medium": "Medium", "high": "High", "highm1": "HighM1",
                   "conservative": "Conservative", "ondemand": "OnDemand", "performance": "Performance",
                   "powersave": "PowerSave", "userspace": "UserSpace", "schedutil": "SchedUtil"}
_GOVERNORS = ("conservative", "ondemand", "performance", "powersave", "userspace", "schedutil")

# The job variables each command sets from these options (observed: srun sets no
# SLURM_GPU_FREQ for its tasks, only salloc sets SLURM_NETWORK, salloc refuses --container).
_VARIABLES = {
    "sbatch": (("cpu-freq", "SLURM_CPU_FREQ_REQ"), ("gpu-freq", "SLURM_GPU_FREQ"), ("container", "SLURM_CONTAINER")),
    "srun": (("cpu-freq", "SLURM_CPU_FREQ_REQ"), ("container", "SLURM_CONTAINER")),
    "salloc": (("cpu-freq", "SLURM_CPU_FREQ_REQ"), ("gpu-freq", "SLURM_GPU_FREQ"), ("network", "SLURM_NETWORK")),
}
# MaxSwitchWait's default: a --switches without @wait waits this long (shown as 1@00:05:00).
DEFAULT_SWITCH_WAIT_S = 300


class RefusedOption(Exception):
    """An option the command refuses before it asks the controller: ``lines`` for stderr, then
    exit with ``exit_code``."""

    def __init__(self, lines: list[str], exit_code: int) -> None:
        super().__init__(lines[-1] if lines else "")
        self.lines = lines
        self.exit_code = exit_code


def cpu_freq_text(value: str) -> str:
    """--cpu-freq as 22.05 writes it back: ``Low``, ``1000000-2000000:Performance``."""
    rng, colon, gov = value.partition(":")
    parts = [_CPU_FREQ_NAMES.get(p.lower(), p) for p in rng.split("-")] if rng else []
    text = "-".join(parts)
    return f"{text}:{_CPU_FREQ_NAMES.get(gov.lower(), gov)}" if colon else text


def cpu_freq_show(value: str) -> str:
    """scontrol show job's line (observed: ``CPU_max_freq=Low `` with its trailing space,
    ``CPU_min_freq=1000000 CPU_max_freq=2000000 Governor=Performance``)."""
    rng, _, gov = cpu_freq_text(value).partition(":")
    parts = rng.split("-") if rng else []
    if len(parts) == 1 and parts[0].lower() in _GOVERNORS:  # a governor alone
        gov, parts = parts[0], []
    out = f"CPU_min_freq={parts[0]} " if len(parts) == 2 else ""
    if parts:
        out += f"CPU_max_freq={parts[-1]} "
    return out + (f"Governor={gov}" if gov else "")


def spec_fields(options: dict[str, Any]) -> dict[str, Any]:
    """The JobSpec fields (wire/model.py, area rest) of these options."""
    spec: dict[str, Any] = {}
    for option, field in (("cpu-freq", "cpu_freq"), ("gpu-freq", "gpu_freq"), ("bb", "burst_buffer"),
                          ("container", "container"), ("cluster-constraint", "cluster_features"),
                          ("network", "network"), ("context", "selinux_context"), ("batch", "batch_features")):
        value = options.get(option)
        if isinstance(value, str):
            spec[field] = value
    if isinstance(options.get("power"), str) and options["power"].lower() == "level":
        spec["power"] = "LEVEL"  # (sbatch_cli warned about and dropped any other word)
    switches = options.get("switches")
    if isinstance(switches, dict) and switches["count"] < 0xFFFFFFFE:  # (22.05: 0xfffffffe up is "not set")
        spec["switches"] = switches["count"]
        minutes = switches.get("max_wait_minutes")
        spec["switch_wait_s"] = DEFAULT_SWITCH_WAIT_S if minutes is None else int(minutes) * 60
    if options.get("reboot"):
        spec["reboot"] = True
        spec["exclusive"] = True  # 22.05 shows a --reboot job OverSubscribe=NO: its nodes are its own
    return spec


def job_variables(prog: str, options: dict[str, Any]) -> dict[str, str]:
    """What ``prog`` puts into the job's (or its tasks') environment for these options."""
    out = {}
    for option, name in _VARIABLES[prog]:
        value = options.get(option)
        if isinstance(value, str):
            out[name] = cpu_freq_text(value) if option == "cpu-freq" else value
    from plurm.tools.acctg_freq import job_variables as acctg_variables

    out.update(acctg_variables(prog, options))  # sbatch/salloc --acctg-freq: SLURM_ACCTG_FREQ, srun's default
    return out


def check_clusters(prog: str, options: dict[str, Any], cluster_name: str | None = None) -> str | None:
    """-M/--clusters: plurm runs one cluster, the one slurm.conf names (its accounting holds
    no other).  Returns the cluster the job goes to, or None when -M was not given; an
    unknown name gets 22.05's line, and -M naming no known cluster is refused (exit 1)."""
    given = options.get("clusters")
    if not isinstance(given, str):
        return None
    if cluster_name is None:
        from plurm.wire.client import read_settings

        cluster_name = read_settings().cluster_name
    names = list(dict.fromkeys(n.strip() for n in given.split(",")))  # (22.05: -M , is one cluster '')
    lines = [f"{prog}: error: No cluster '{n}' known by database." for n in names
             if n != cluster_name and n.lower() != "all"]
    if len(lines) == len(names):
        lines.append(f"{prog}: error: '{given}' can't be reached now, or it is an invalid entry for --cluster.  "
                     "Use 'sacctmgr list clusters' to see available clusters.")
        raise RefusedOption(lines, 1)
    for line in lines:
        print(line, file=_stderr())
    return cluster_name


def check_x11(prog: str, options: dict[str, Any], environ: dict[str, str]) -> None:
    """srun/salloc --x11: 22.05 checks the local X display, then asks ``xauth`` for its magic
    cookie, each refusal exit 255 (observed).  plurm forwards no X11 (Slurm's needs
    PrologFlags=X11): a display that passes both is refused too, in plurm's words."""
    if options.get("x11") is None:
        return
    display = environ.get("DISPLAY")
    if not display:
        raise RefusedOption([f"{prog}: error: No DISPLAY variable set, cannot setup x11 forwarding."], 255)
    host, _, number = display.rpartition(":")
    if not host or host == "unix":  # a local display: its socket
        socket_path = f"/tmp/.X11-unix/X{number.split('.')[0]}"
        if not os.path.exists(socket_path):
            raise RefusedOption([f"{prog}: error: Cannot stat() local X11 socket `{socket_path}`"], 255)
    if not _xauth_cookie(display):
        raise RefusedOption([f"{prog}: error: x11_get_xauth: Could not retrieve magic cookie. "
                             "Cannot use X11 forwarding."], 255)
    raise RefusedOption([f"{prog}: error: plurm does not forward X11 (Slurm needs PrologFlags=X11 for it)"], 255)


def _xauth_cookie(display: str) -> bool:
    import subprocess

    try:
        found = subprocess.run(["xauth", "list", display], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return found.returncode == 0 and bool(found.stdout.strip())


def check_salloc_container(options: dict[str, Any], launch_parameters: str | None = None) -> None:
    """salloc --container runs its command in the container only as an interactive step
    (``launch_parameters``: slurm.conf's LaunchParameters, asked of the controller when None)."""
    if not isinstance(options.get("container"), str):
        return
    if launch_parameters is None:
        from plurm.wire.client import Connection

        conn = Connection()
        try:
            conf = conn.request("config", {}).get("options") or {}
        finally:
            conn.close()
        launch_parameters = next((str(v) for k, v in conf.items() if str(k).lower() == "launchparameters"), "")
    if "use_interactive_step" not in [p.strip().lower() for p in launch_parameters.split(",")]:
        raise RefusedOption(["salloc: error: --container requires LaunchParameters=use_interactive_step"], 1)


def _stderr() -> Any:
    import sys

    return sys.stderr


def show_lines(spec: dict[str, Any], where: str) -> list[str]:
    """scontrol show job's lines for these options, in 22.05's order (observed with every one
    set): after StdOut ``Switches``, ``BurstBuffer``, the CPU frequency (``where="before_power"``);
    after Power= ``TresFreq``, ``Container`` (``"after_power"``); each only when set."""
    out = []
    if where == "before_power":
        if spec.get("switches") is not None:
            wait = int(spec.get("switch_wait_s") or 0)
            out.append(f"Switches={spec['switches']}@{wait // 3600:02d}:{wait // 60 % 60:02d}:{wait % 60:02d}")
        if spec.get("burst_buffer"):
            out.append(f"BurstBuffer={spec['burst_buffer']}")
        if spec.get("cpu_freq"):
            out.append(cpu_freq_show(spec["cpu_freq"]))
    else:
        if spec.get("gpu_freq"):
            out.append(f"TresFreq=gpu:{spec['gpu_freq']}")
        if spec.get("container") is not None:
            out.append(f"Container={spec['container']}")
    return out


def ring_bell(options: dict[str, Any], waited_s: float, out: Any) -> None:
    """salloc's terminal bell once the allocation is granted (salloc(1)): with --bell, or when it
    waited more than ten seconds unless --no-bell; only when stdout is a terminal."""
    try:
        tty = out.isatty()
    except (AttributeError, ValueError):
        tty = False
    if tty and (options.get("bell") or (waited_s > 10 and not options.get("no-bell"))):
        out.write("\a")
        out.flush()
