"""The checks of sbatch, srun and salloc once every option is read (``_validate``, called by
tools/sbatch_cli.py's parsers), in sbatch 22.05.8's order, with the words it prints."""

from __future__ import annotations

import os

from plurm.grammar import values as V
from plurm.grammar.options import OptionError
from plurm.tools.jobspec_timeprio import check_options as check_timeprio_options

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only (start-up cost)
    from typing import Any


def _validate(prog: str, st: Any, warnings: list[str],
              gres_types: set[str] | None = None) -> None:
    """Checks made once every option is read, in sbatch's order: the fatal conflicts,
    GRES names (against slurm.conf GresTypes when known), the checks left for the end
    (GRES syntax, --hint), then GPU combinations and the node/task adjustments."""
    t = st.typed
    if "hint" in st.late:          # --hint is checked first of all (observed)
        raise st.late["hint"]
    mems = [k for k in ("mem", "mem-per-cpu", "mem-per-gpu") if k in t]
    if len(mems) > 1:
        raise OptionError([f"{prog}: fatal: --mem, --mem-per-cpu, and --mem-per-gpu are "
                           "mutually exclusive."], 1)
    if "core-spec" in t and "thread-spec" in t:
        # (sic: Slurm's message spells it "thred")
        raise OptionError([f"{prog}: fatal: -S/--core-spec and --thred-spec options are "
                           "mutually exclusive"], 1)
    from plurm.tools.jobspec_topology import check_options as check_topology_options  # (area: topology)

    check_topology_options(prog, t)  # -B's numbers, --ntasks-per-gpu's GPUs
    if gres_types is not None and any(g["name"] not in gres_types
                                      for g in t.get("gres") or []):
        raise OptionError([f"{prog}: error: Invalid generic resource (gres) "
                           "specification"], 1)
    for err in st.late.values():
        raise err
    _validate_gpus(prog, t)
    check_timeprio_options(prog, t)  # --priority's bound, --begin after --deadline (tools/jobspec_timeprio.py)
    if "power" in t and str(st.raw["power"]).lower() != "level":
        # sbatch says so and carries on without it (-v shows "unset")
        warnings.extend([f"{prog}: error: Ignoring unrecognized power option "
                         f"({st.raw['power']})"] * (2 if prog == "sbatch" else 1))  # (sbatch: twice, observed)
        st.raw["power"] = "unset"
        t["power"] = None
    if "cpus-per-gpu" in t and "cpus-per-task" in t:
        raise OptionError([f"{prog}: error: --cpus-per-gpu is mutually exclusive with "
                           "--cpus-per-task",
                           f"{prog}: error: Invalid generic resource (gres) specification"], 1)
    # more nodes than tasks: sbatch lowers the node count (and says so when the minimum
    # itself is too high); sbatch -v shows the lowered value
    if "nodes" in t and isinstance(t.get("ntasks"), int):
        lo, hi = t["nodes"]
        n = t["ntasks"]
        if lo > n:
            warnings.append(f"{prog}: Warning: can't run {n} processes on {lo} nodes, "
                            f"setting nnodes to {n}")
            lo = hi = n
        elif hi > n:
            hi = n
        if [lo, hi] != t["nodes"]:
            t["nodes"] = [lo, hi]
            st.raw["nodes"] = nodes_str(t["nodes"])
    if "chdir" in t and not os.path.isabs(t["chdir"]):
        t["chdir"] = full_path(os.getcwd(), t["chdir"])


def _gpu_count(spec: Any) -> int | None:
    """The count in a [type:]count GPU request string, None when it has none."""
    if not isinstance(spec, str):
        return None
    n, rest = V._strtol(spec.rpartition(":")[2])
    return n if n is not None and not rest else None


def _validate_gpus(prog: str, t: dict[str, Any]) -> None:
    """GPU request combinations sbatch refuses before submitting (status 1); each message
    is followed by the generic GRES line, as sbatch prints it."""
    gres_line = f"{prog}: error: Invalid generic resource (gres) specification"
    msg = None
    gpus = t.get("gpus")
    total = gpus.get("count") if isinstance(gpus, dict) else None
    if isinstance(gpus, dict) and total is None:
        total = 0            # an unreadable count counts as none in these checks
    if "gpus-per-socket" in t and "sockets-per-node" not in t:
        msg = "--gpus-per-socket option requires --sockets-per-node specification"
    elif "gpus-per-task" in t and total is None and "ntasks" not in t:
        msg = ("Failed to validate job spec. --gpus-per-task used without either --gpus "
               "or -n/--ntasks is not allowed.")
    elif total is not None and "nodes" in t and total < t["nodes"][0]:
        msg = "Failed to validate job spec, --gpus < -N"
    elif total is not None and "ntasks" in t and _gpu_count(t.get("gpus-per-task")):
        per = _gpu_count(t["gpus-per-task"]) or 1
        if total // per != t["ntasks"]:
            msg = ("Failed to validate job spec. Based on --gpus and --gpus-per-task number "
                   "of requested tasks differ from -n/--ntasks.")
    if msg:
        raise OptionError([f"{prog}: error: {msg}", gres_line], 1)
    if isinstance(gpus, dict) and gpus.get("count") is None:
        # sbatch passes an unreadable --gpus on; the controller refuses it
        raise OptionError([f"{prog}: error: Batch job submission failed: Invalid generic "
                           "resource (gres) specification"], 1)


def nodes_str(v: list[int]) -> str:
    return str(v[0]) if v[0] == v[1] else f"{v[0]}-{v[1]}"


def full_path(base: str, path: str) -> str:
    # sbatch joins without normalising ("/cwd/./runs/conv/x.out")
    return path if path.startswith("/") else f"{base}/{path}"
