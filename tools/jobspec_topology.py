"""sbatch/srun/salloc's layout options as JobSpec fields (issue 14, area topology).

Kept apart from tools/jobspec.py so that its build_spec only calls :func:`add_fields`.
Light on purpose: the commands import it on their start-up path (plain dicts, no msgspec).
The controller counts these in corescheduler/topology.py.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only (start-up cost)
    from typing import Any

# The option keys that act (tools/jobspec._HANDLED): -S and --thread-spec act as Slurm 22.05
# acts without AllowSpecResourcesUsage (ignored, with its message: spec_resources_notice).
OPTIONS = frozenset((
    "sockets-per-node", "cores-per-socket", "threads-per-core", "extra-node-info", "ntasks-per-core",
    "ntasks-per-socket", "ntasks-per-gpu", "hint", "mincpus", "core-spec", "thread-spec",
))

_INT_FIELDS = (("sockets-per-node", "sockets_per_node"), ("cores-per-socket", "cores_per_socket"),
               ("threads-per-core", "threads_per_core"), ("ntasks-per-core", "ntasks_per_core"),
               ("ntasks-per-socket", "ntasks_per_socket"), ("ntasks-per-gpu", "ntasks_per_gpu"),
               ("mincpus", "min_cpus"))


class ExtraNodeInfoError(ValueError):
    """-B with a field that is neither a count nor '*': which field (0, 1, 2) and its text."""

    def __init__(self, position: int, text: str) -> None:
        super().__init__(text)
        self.position = position
        self.text = text


_ORDINALS = ("first", "second", "third")


def parse_extra_node_info(value: str) -> list[int | None]:
    """-B/--extra-node-info=S[:C[:T]]: sockets per node, cores per socket, threads per core;
    '*' (or an empty field) leaves one unset, and so does 0 (Slurm shows Socks/Node=0 and
    selects as without it).  Fields past the third are not read (as sbatch: -B 1:2:3:4
    asks for 3 threads per core)."""
    out: list[int | None] = []
    for position, field in enumerate(str(value).split(":")[:3]):
        if field in ("", "*"):
            out.append(None)
        elif field.isdigit():
            out.append(int(field) or None)
        else:
            raise ExtraNodeInfoError(position, field)
    return out + [None] * (3 - len(out))


def check_options(prog: str, typed: dict[str, Any]) -> None:
    """sbatch's own refusals of the layout options (tools/sbatch_cli._validate calls it)."""
    if "extra-node-info" in typed:
        check_extra_node_info(prog, typed["extra-node-info"])
    check_ntasks_per_gpu(prog, typed)


def check_extra_node_info(prog: str, value: object) -> None:
    """sbatch's refusal of an unreadable -B (status 1, measured on 22.05.8)."""
    from plurm.grammar.values import OptionError

    try:
        parse_extra_node_info(str(value))
    except ExtraNodeInfoError as exc:
        raise OptionError([f'{prog}: error: Invalid numeric value "{exc.text}" for '
                           f"{_ORDINALS[exc.position]} arg of -B."], 1) from None


def check_ntasks_per_gpu(prog: str, typed: dict[str, Any]) -> None:
    """--ntasks-per-gpu with neither GPUs nor -N/-n: sbatch refuses it (status 1, 22.05.8)."""
    from plurm.grammar.values import OptionError

    if "ntasks-per-gpu" not in typed or any(k in typed for k in ("nodes", "ntasks", "gpus", "gpus-per-node",
                                                                  "gpus-per-task", "gpus-per-socket")):
        return
    if any(isinstance(g, dict) and g.get("name") == "gpu" for g in typed.get("gres") or []):
        return
    raise OptionError([f"{prog}: error: gres_job_state_validate: --ntasks-per-tres needs either a GRES GPU "
                       "specification or a node/ntask specification",
                       f"{prog}: error: Invalid generic resource (gres) specification"], 1)


def add_fields(options: dict[str, Any], spec: dict[str, Any]) -> None:
    """The layout fields of ``spec`` from the parsed options (explicit options over -B)."""
    extra = options.get("extra-node-info")
    if isinstance(extra, str) and extra:
        try:
            parsed = parse_extra_node_info(extra)
        except ExtraNodeInfoError:
            parsed = [None, None, None]  # sbatch refused it before (tools/sbatch_cli._validate)
        for value, name in zip(parsed, ("sockets_per_node", "cores_per_socket", "threads_per_core")):
            if value is not None:
                spec[name] = value
    for option, name in _INT_FIELDS:
        value = options.get(option)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            spec[name] = value
    hint = options.get("hint")
    if isinstance(hint, list):
        spec["hint"] = [str(h) for h in hint if h != "help"]
    per_gpu = spec.get("ntasks_per_gpu")
    if per_gpu and spec.get("ntasks") is None:
        from plurm.common.gres import gpus_in_all  # (imported by build_spec already)

        gpus = gpus_in_all(spec.get("gres_req") or [], int(spec.get("nodes_min") or 1))
        if gpus:
            spec["ntasks"] = gpus * per_gpu  # as sbatch: --gpus=2 --ntasks-per-gpu=2 is 4 tasks



def spec_resources_notice(prog: str, options: dict[str, Any]) -> list[str]:
    """What sbatch says of -S/--thread-spec without AllowSpecResourcesUsage (plurm's default,
    and it takes no other): the options are ignored (measured, Slurm 22.05.8)."""
    lines = []
    if "core-spec" in options and options["core-spec"] is not None:
        lines.append(f"{prog}: error: Ignoring -S since it's not allowed by configuration "
                     "(AllowSpecResourcesUsage = No)")
    if "thread-spec" in options and options["thread-spec"] is not None:
        lines.append(f"{prog}: error: Ignoring --thread-spec since it's not allowed by configuration "
                     "(AllowSpecResourcesUsage = No)")
    return lines
