"""plurm.corescheduler: the controller, its state, and the scheduling core.

Kernels are chosen at first use, msgpack-style: PLURM_NO_EXTENSIONS=1
forces the pure-Python twins; otherwise the compiled modules are used when
they were built.  ``COMPILED`` tells which path runs.  The choice is lazy
so that the user commands, which import this package for its client, do
not load the kernels.
"""

from __future__ import annotations

import os
from types import ModuleType


def _load_placement() -> ModuleType:
    if os.environ.get("PLURM_NO_EXTENSIONS", "") not in ("", "0"):
        from plurm.corescheduler import _placement_py as module
    else:
        from plurm.corescheduler import _placement_c as module
    return module


def __getattr__(name: str):
    if name == "placement":
        module = _load_placement()
        globals()["placement"] = module
        return module
    if name == "COMPILED":
        # _placement_c.py links to the pure source, so importing it succeeds even
        # when nothing was compiled: only an extension module counts.
        compiled = not str(getattr(__getattr__("placement"), "__file__", "")).endswith(".py")
        globals()["COMPILED"] = compiled
        return compiled
    raise AttributeError(name)


__all__ = ["COMPILED", "placement"]
