"""The "defined options" block that ``sbatch -v`` (and ``srun -v``, ``salloc -v``) prints.

``format_verbose_block`` shows each option of a parsed request as sbatch 22.05.8 does
(times as ``D-HH:MM:SS``, memory with its unit, paths made absolute without normalising).
Imported only when ``-v`` is given, so a plain submission does not load it; it reads the
request ``sbatch_cli`` built and never the other way round.
"""
from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only (start-up cost)
    from typing import Any

from plurm.grammar import structvalues as S, values as V
from plurm.tools.sbatch_cli import SbatchRequest, SrunRequest
from plurm.tools.sbatch_checks import full_path, nodes_str

_NOT_SHOWN = ("het-group",)   # consumed while splitting srun's components; -v omits it
# the order 22.05.8's -v lists the events in, whatever order they were given in (observed:
# tests/tools/reference/cli, sbatch-mail-every-kind)
_MAIL_PRINT_ORDER = ("ARRAY_TASKS", "INVALID_DEPEND", "BEGIN", "END", "FAIL", "REQUEUE",
                     "STAGE_OUT", "TIME_LIMIT_50", "TIME_LIMIT_80", "TIME_LIMIT_90",
                     "TIME_LIMIT")
_PROFILE_ORDER = ("Energy", "Lustre", "Network", "Task")
_CPU_FREQ_WORDS = {w.lower(): w for w in ("Low", "Medium", "High", "HighM1", "Conservative",
                                          "OnDemand", "Performance", "PowerSave",
                                          "UserSpace", "SchedUtil")}


def _profile_str(raw: str) -> str:
    words = {w.strip().lower() for w in raw.split(",")}
    if "none" in words:
        return "None"
    if "all" in words:
        return ",".join(_PROFILE_ORDER)
    return ",".join(p for p in _PROFILE_ORDER if p.lower() in words) or raw


def _display(key: str, raw: Any, typed: Any, opts: dict[str, Any] | None = None) -> str:
    """The value as ``sbatch -v`` prints it (formats observed with sbatch 22.05.8)."""
    opts = opts or {}
    if key in ("time", "time-min", "delay-boot"):
        return V.minutes_to_str(typed)
    if key in ("output", "error", "input"):
        return full_path(opts.get("chdir") or os.getcwd(), str(raw))
    if key == "profile":
        return _profile_str(str(raw))
    if key == "cpu-freq":
        return "-".join(_CPU_FREQ_WORDS.get(p.lower(), p) for p in str(raw).split("-"))
    if key == "power":
        return "unset" if raw == "unset" else str(raw).upper()
    if key == "propagate":
        return "ALL" if raw is True else str(raw)
    if key == "no-kill":
        return "unset" if str(raw).lower() == "off" else "set"
    if key == "oversubscribe":
        return "oversubscribe"
    if key == "get-user-env":
        return "0" if raw is True else str(raw)
    if key == "extra-node-info":
        return ":".join(f for f in str(raw).split(":") if f != "*")
    if key == "switches":
        count, at, wait = str(raw).partition("@")
        if not at:
            return count
        try:
            return f"{count}@{V.minutes_to_str(V.parse_time(wait, 'switches'))}"
        except V.OptionError:
            return str(raw)
    if key in ("mem", "mem-per-cpu", "mem-per-gpu", "tmp"):
        return V.mbytes_to_str(typed)
    if key == "nodes":
        return nodes_str(typed)
    if key == "gres":
        return ",".join("gres:" + g for g in str(raw).split(","))
    if key == "open-mode":
        return typed[:1]
    if key == "exclusive":
        return typed
    if key == "mail-type":
        return ",".join(t for t in _MAIL_PRINT_ORDER if t in typed["types"]) or "NONE"
    if key in ("begin", "deadline"):
        return S.time_to_iso(typed)
    if key == "nice":
        return str(typed)
    if key == "signal":
        flags = ("R" if typed["on_reservation_end"] else "") + \
                ("B" if typed["batch_shell_only"] else "")
        s = (flags + ":" if flags else "") + typed["signal"]
        # the warning time is shown when it is not the default 60 s (B:USR1@60 shows as
        # B:USR1, USR1@90 as USR1@90: observed with 22.05.8)
        return s if typed["warn_seconds"] == 60 else f"{s}@{typed['warn_seconds']}"
    if key == "chdir":
        return typed
    if key == "requeue":
        return "requeue"
    if key == "no-requeue":
        return "no-requeue"
    if key == "verbose":
        return str(typed)
    if key == "kill-on-bad-exit":
        return "1" if raw is True else str(raw)
    if raw is True:
        return "set"
    return str(raw)


def format_verbose_block(req: SbatchRequest | SrunRequest, prog: str = "sbatch") -> str:
    """The "defined options" block ``sbatch -v`` (or ``srun -v``/``salloc -v`` with that
    ``prog``) prints, one per component."""
    blocks = []
    comps = req.raw_components or [req.raw_options]
    typed_comps = req.components or [req.options]
    for raw, typed in zip(comps, typed_comps):
        lines = [f"{prog}: defined options", f"{prog}: {'-' * 20} {'-' * 20}"]
        for key in sorted(raw):
            if key in _NOT_SHOWN:
                continue
            shown = _display(key, raw[key], typed.get(key), typed)
            lines.append(f"{prog}: {key:<20}: {shown}")
        lines += [f"{prog}: {'-' * 20} {'-' * 20}", f"{prog}: end of defined options"]
        blocks.append("\n".join(lines) + "\n")
    return "".join(blocks)
