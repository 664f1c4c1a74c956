"""plurm.corescheduler: the controller, its state, and the scheduling core.

Kernels are chosen at first use, msgpack-style: PLURM_NO_EXTENSIONS=1
forces the pure-Python twins; otherwise the compiled modules are used when
they were built.  ``COMPILED`` tells which path runs (True only when every
kernel is compiled).  The choice is lazy, so importing a module of the core
does not load kernels it does not use.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

# Each kernel: plain Python ``_NAME_py.py``, compiled from its ``_NAME_c.py`` link.
KERNELS = ("placement", "profile", "multifactor")


def _load(kernel: str) -> ModuleType:
    twin = "py" if os.environ.get("PLURM_NO_EXTENSIONS", "") not in ("", "0") else "c"
    return importlib.import_module(f"plurm.corescheduler._{kernel}_{twin}")


def _compiled(module: ModuleType) -> bool:
    # _NAME_c.py links to the pure source, so importing it succeeds even when
    # nothing was compiled: only an extension module counts.
    return not str(getattr(module, "__file__", "")).endswith(".py")


def __getattr__(name: str):
    if name in KERNELS:
        module = _load(name)
        globals()[name] = module
        return module
    if name == "COMPILED":
        compiled = all(_compiled(__getattr__(kernel)) for kernel in KERNELS)
        globals()["COMPILED"] = compiled
        return compiled
    raise AttributeError(name)


__all__ = ["COMPILED", "KERNELS", "multifactor", "placement", "profile"]
