"""Resource limits propagated from the submitting process to the job's processes.

As Slurm 22.05: sbatch and srun read their own soft limits (getrlimit) for the names
``--propagate[=NAME,...]`` gives, else slurm.conf's PropagateResourceLimits (default ALL) less
PropagateResourceLimitsExcept, and pass each one as ``SLURM_RLIMIT_<NAME>=<value>`` in the
job's or step's environment (22.05's srun prolog sees them: tests/integration/reference/
srun-client/capture2.txt; RLIM_INFINITY as 18446744073709551615).  On the node, the batch
shell's and each task's environment loses them and the process gets them as its soft limits
(``take``, ``preexec``), before it runs anything of the job's.

The node never raises a hard limit: a value above the node's hard limit is capped to it (a
user could set their own soft limit that far; a variable in the environment is the user's
word, and must not lift what the node's administrator set).
"""

from __future__ import annotations

import functools
import resource
from collections.abc import Callable, Mapping
from typing import Any

# slurm.conf's and --propagate's names, in the order 22.05's slurmstepd applies them.
NAMES: dict[str, int] = {
    "CPU": resource.RLIMIT_CPU, "FSIZE": resource.RLIMIT_FSIZE, "DATA": resource.RLIMIT_DATA,
    "STACK": resource.RLIMIT_STACK, "CORE": resource.RLIMIT_CORE, "RSS": resource.RLIMIT_RSS,
    "NPROC": resource.RLIMIT_NPROC, "NOFILE": resource.RLIMIT_NOFILE, "MEMLOCK": resource.RLIMIT_MEMLOCK,
    "AS": resource.RLIMIT_AS,
}
PREFIX = "SLURM_RLIMIT_"
INFINITY_TEXT = str(2 ** 64 - 1)  # RLIM_INFINITY as 22.05 writes it (an unsigned 64-bit value)


class LimitsError(ValueError):
    """A --propagate (or PropagateResourceLimits) list with a name that is no limit's."""


def parse(text: str | None) -> list[str]:
    """The names of a comma-separated list (ALL, NONE, or names; case does not matter)."""
    words = [w.strip().upper() for w in (text or "").split(",") if w.strip()]
    if not words or words == ["ALL"]:
        return list(NAMES)
    if words == ["NONE"]:
        return []
    bad = [w for w in words if w not in NAMES]
    if bad:
        raise LimitsError(f"Bad rlimit name: {bad[0]}")
    return [n for n in NAMES if n in words]


def chosen(option: Any, conf_limits: str | None, conf_except: str | None) -> list[str]:
    """Which limits propagate: ``--propagate``'s list (True or "": all), else slurm.conf's."""
    if option is not None and option is not False:
        return parse(None if option is True else str(option))
    names = parse(conf_limits) if conf_limits else list(NAMES)
    except_names = set(parse(conf_except)) if conf_except and conf_except.strip().upper() != "NONE" else set()
    return [n for n in names if n not in except_names]


def _text(value: int) -> str:
    return INFINITY_TEXT if value == resource.RLIM_INFINITY else str(value)


def variables(names: list[str]) -> dict[str, str]:
    """``SLURM_RLIMIT_<NAME>``: this process's soft limit of each of ``names``."""
    return {PREFIX + n: _text(resource.getrlimit(NAMES[n])[0]) for n in names}


def take(env: dict[str, str]) -> list[tuple[int, int]]:
    """The limits ``env`` asks for, removed from it: (resource, soft value) pairs; a value that
    is no number (the user's word, as any variable) is dropped."""
    out: list[tuple[int, int]] = []
    for name, which in NAMES.items():
        text = env.pop(PREFIX + name, None)
        if text is None:
            continue
        text = text.strip()
        if not text.isdigit() or len(text) > 20:
            continue
        value = int(text)
        out.append((which, resource.RLIM_INFINITY if value >= 2 ** 64 - 1 else value))
    return out


def apply(limits: list[tuple[int, int]]) -> None:
    """In the child: each soft limit set, never above the hard one (only os-level calls: it runs
    between fork and exec).  A limit the kernel refuses is left as it was."""
    for which, value in limits:
        try:
            _soft, hard = resource.getrlimit(which)
            if hard != resource.RLIM_INFINITY and (value == resource.RLIM_INFINITY or value > hard):
                value = hard
            resource.setrlimit(which, (value, hard))
        except (OSError, ValueError):
            continue


def _changes(which: int, value: int) -> bool:
    """Whether apply() would change this process's (hence its children's) soft limit."""
    try:
        soft, hard = resource.getrlimit(which)
    except (OSError, ValueError):
        return True
    if hard != resource.RLIM_INFINITY and (value == resource.RLIM_INFINITY or value > hard):
        value = hard
    return value != soft


def preexec(kwargs: Mapping[str, Any], limits: list[tuple[int, int]]) -> dict[str, Any]:
    """Popen's arguments with ``limits`` applied in the child after its own preexec_fn (if any).
    Limits the child inherits already are left out: with none left and no preexec_fn, Popen
    starts the child with vfork (issue 17: the submitter's limits are often the node's)."""
    out = dict(kwargs)
    limits = [(which, value) for which, value in limits if _changes(which, value)]
    if not limits:
        return out
    before: Callable[[], None] | None = out.pop("preexec_fn", None)
    out["preexec_fn"] = functools.partial(_child, before, list(limits))
    return out


def _child(before: Callable[[], None] | None, limits: list[tuple[int, int]]) -> None:
    if before is not None:
        before()
    apply(limits)
