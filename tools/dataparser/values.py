"""The pieces every data_parser object is made of: no-value structs, exit codes, TRES lists,
``meta``, ``errors`` and ``warnings``.

Slurm wraps a number that may be unset or infinite as ``{"set", "infinite", "number"}``
(``*_no_val_struct`` in the specs); times are whole Unix seconds; lists of names that the
text commands print comma-separated are lists of strings (``csv_string``).
"""

from __future__ import annotations

import signal as _signal

from plurm import SLURM_COMPAT_VERSION, __version__

# TRES ids as slurmdbd numbers them (the first five are fixed in Slurm; GRES start at 1001).
TRES_IDS = {"cpu": 1, "mem": 2, "energy": 3, "node": 4, "billing": 5, "fs/disk": 6, "vmem": 7, "pages": 8}
GRES_TRES_BASE = 1001
# Slurm's error number and text for a job id it does not know (slurm_errno.h).
ESLURM_INVALID_JOB_ID = 2017
ESLURM_INVALID_NODE_NAME = 2009
ESLURM_INVALID_PARTITION_NAME = 2000


def number(value: int | float | None, infinite: bool = False) -> dict:
    """A ``*_no_val_struct``: None is unset, ``infinite`` is UNLIMITED/INFINITE."""
    if infinite:
        return {"set": False, "infinite": True, "number": 0}
    if value is None:
        return {"set": False, "infinite": False, "number": 0}
    return {"set": True, "infinite": False, "number": value}


def seconds(ts: float | None) -> dict:
    """A Unix time (whole seconds) as a ``uint64_no_val_struct``; None or 0 is unset."""
    if not ts:
        return number(None)
    return number(int(ts))


def whole(ts: float | None) -> int:
    """A Unix time as the plain integer slurmdbd's job object uses (0: not yet)."""
    return int(ts) if ts else 0


def csv(items: list[str] | None) -> list[str]:
    return [i for i in (items or []) if i]


def exit_code(code: int | None, sig: int = 0, pending: bool = False) -> dict:
    """A ``process_exit_code_verbose``: status, return code and the signal that ended it."""
    if pending or code is None:
        return {"status": ["PENDING"], "return_code": number(None),
                "signal": {"id": number(None), "name": ""}}
    if sig:
        try:
            name = _signal.Signals(sig).name[3:]
        except ValueError:
            name = ""
        return {"status": ["SIGNALED"], "return_code": number(code),
                "signal": {"id": number(sig), "name": name}}
    return {"status": ["SUCCESS" if code == 0 else "ERROR"], "return_code": number(code),
            "signal": {"id": number(None), "name": ""}}


_UNITS = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 ** 2, "P": 1024 ** 3}


def _count(kind: str, text: str) -> int:
    """A TRES count: memory in MB from ``4000M``/``3.91G``; anything else an integer."""
    if kind == "mem" and text and text[-1].upper() in _UNITS:
        return int(round(float(text[:-1]) * _UNITS[text[-1].upper()]))
    try:
        return int(float(text))
    except ValueError:
        return 0


def tres_list(text: str | None) -> list[dict]:
    """``cpu=4,mem=4000M,node=1,billing=4,gres/gpu=1`` -> a ``tres_list``."""
    out: list[dict] = []
    for item in (text or "").split(","):
        key, eq, value = item.partition("=")
        if not eq or not key:
            continue
        kind, slash, name = key.partition("/")
        if key in TRES_IDS:
            out.append({"type": key, "name": "", "id": TRES_IDS[key], "count": _count(key, value)})
        elif slash:
            gres_id = GRES_TRES_BASE + (0 if name == "gpu" else len(out))
            out.append({"type": kind, "name": name, "id": gres_id, "count": _count(kind, value)})
    return out


def meta(version: str, command: list[str], cluster: str, user: str = "", group: str = "",
         source: str = "", accounting: bool = False) -> dict:
    """``openapi_meta``: which data_parser wrote this, for whom, and which Slurm it speaks.

    The Slurm version is the one plurm answers as (``SLURM_COMPAT_VERSION``); the plugin
    name says that plurm wrote it, for tools that need to tell the two apart.
    """
    major, minor, micro = (SLURM_COMPAT_VERSION.split(".") + ["", "", ""])[:3]
    return {
        "plugin": {"type": "", "name": f"plurm {__version__}", "data_parser": f"data_parser/{version}",
                   "accounting_storage": "accounting_storage/slurmdbd" if accounting else ""},
        "client": {"source": source, "user": user, "group": group},
        "command": list(command),
        "slurm": {"version": {"major": major, "micro": micro, "minor": minor},
                  "release": SLURM_COMPAT_VERSION, "cluster": cluster},
    }


def error(description: str, number_: int, text: str, source: str) -> dict:
    """One ``openapi_error``: Slurm's error number and text, and the call that failed."""
    return {"description": description, "error_number": number_, "error": text, "source": source}


def envelope(body: dict, meta_: dict, errors: list[dict] | None = None,
             warnings: list[dict] | None = None) -> dict:
    """A response object: ``meta``, ``errors``, ``warnings``, then what the body holds (the
    order the commands print them in)."""
    out = {"meta": meta_, "errors": list(errors or []), "warnings": list(warnings or [])}
    out.update(body)
    return out
