"""The host's PMIx server library (``libpmix.so.2``, PMIx 4.x) through ctypes, loaded on first use.

plurm ships no PMIx of its own: ``--mpi=pmix`` serves the tasks through the library Debian's
``libpmix2`` installs (the one Open MPI's own client side links against), so server and clients
speak one version.  This module holds the ABI only -- the structures of ``pmix_common.h`` and
``pmix_server.h`` as PMIx 4 lays them out on a 64-bit host, the functions plurm calls, and
helpers that build ``pmix_info_t`` arrays -- and nothing of a step (nodeagent/pmix_server.py).

Where the library is looked for: ``PLURM_LIBPMIX`` (a path; an empty or missing file means
"none here"), else the places Debian and a default PMIx build put it.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

# Debian 12's libpmix2 (4.2.2), then the usual sonames a PMIx build installs.
CANDIDATES = ("/usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so.2", "/usr/lib/x86_64-linux-gnu/libpmix.so.2",
              "/usr/lib64/libpmix.so.2", "/usr/lib/libpmix.so.2", "/usr/local/lib/libpmix.so.2")

PMIX_MAX_NSLEN = 255
PMIX_MAX_KEYLEN = 511

# pmix_common.h's status codes and data types (stable since PMIx 2).
PMIX_SUCCESS = 0
PMIX_ERROR = -1
PMIX_ERR_NOT_SUPPORTED = -47
PMIX_OPERATION_SUCCEEDED = -157
PMIX_BOOL, PMIX_STRING, PMIX_UINT16, PMIX_UINT32, PMIX_PROC_RANK, PMIX_DATA_ARRAY, PMIX_INFO = 1, 3, 13, 14, 40, 39, 24
PMIX_RANK_WILDCARD = 0xFFFFFFFE


class LibraryMissing(OSError):
    """No usable PMIx library on this host."""


class PmixBO(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_void_p), ("size", ctypes.c_size_t)]


class PmixEnvar(ctypes.Structure):
    _fields_ = [("envar", ctypes.c_char_p), ("value", ctypes.c_char_p), ("separator", ctypes.c_char)]


class PmixValueData(ctypes.Union):
    # Only the members plurm writes or reads; envar is the largest (24 bytes), so the union's size is right.
    _fields_ = [("flag", ctypes.c_bool), ("string", ctypes.c_char_p), ("uint16", ctypes.c_uint16),
                ("uint32", ctypes.c_uint32), ("rank", ctypes.c_uint32), ("bo", PmixBO),
                ("darray", ctypes.c_void_p), ("ptr", ctypes.c_void_p), ("envar", PmixEnvar)]


class PmixValue(ctypes.Structure):
    _fields_ = [("type", ctypes.c_uint16), ("data", PmixValueData)]


class PmixInfo(ctypes.Structure):
    _fields_ = [("key", ctypes.c_char * (PMIX_MAX_KEYLEN + 1)), ("flags", ctypes.c_uint32), ("value", PmixValue)]


class PmixProc(ctypes.Structure):
    _fields_ = [("nspace", ctypes.c_char * (PMIX_MAX_NSLEN + 1)), ("rank", ctypes.c_uint32)]


class PmixDataArray(ctypes.Structure):
    _fields_ = [("type", ctypes.c_uint16), ("size", ctypes.c_size_t), ("array", ctypes.c_void_p)]


# What the layouts must measure (pmix_common.h of PMIx 4 on x86_64, checked by the tests).
SIZES = {"pmix_info_t": (PmixInfo, 552), "pmix_value_t": (PmixValue, 32), "pmix_proc_t": (PmixProc, 260),
         "pmix_data_array_t": (PmixDataArray, 24)}

# Callback types of pmix_common.h / pmix_server.h.
status_t = ctypes.c_int
OpCb = ctypes.CFUNCTYPE(None, status_t, ctypes.c_void_p)
ReleaseCb = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
ModexCb = ctypes.CFUNCTYPE(None, status_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ReleaseCb,
                           ctypes.c_void_p)
ClientConnectedFn = ctypes.CFUNCTYPE(status_t, ctypes.POINTER(PmixProc), ctypes.c_void_p, OpCb, ctypes.c_void_p)
ClientFinalizedFn = ClientConnectedFn
AbortFn = ctypes.CFUNCTYPE(status_t, ctypes.POINTER(PmixProc), ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p,
                           ctypes.POINTER(PmixProc), ctypes.c_size_t, OpCb, ctypes.c_void_p)
FenceNbFn = ctypes.CFUNCTYPE(status_t, ctypes.POINTER(PmixProc), ctypes.c_size_t, ctypes.POINTER(PmixInfo),
                             ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, ModexCb, ctypes.c_void_p)
DmodexFn = ctypes.CFUNCTYPE(status_t, ctypes.POINTER(PmixProc), ctypes.POINTER(PmixInfo), ctypes.c_size_t, ModexCb,
                            ctypes.c_void_p)

MODULE_SLOTS = 28  # pmix_server_module_t of PMIx 4.0: 28 function pointers (224 bytes)


class PmixServerModule(ctypes.Structure):
    # The first five slots are the v1 interfaces plurm serves; the rest stay NULL (not supported).
    _fields_ = [("client_connected", ClientConnectedFn), ("client_finalized", ClientFinalizedFn),
                ("abort", AbortFn), ("fence_nb", FenceNbFn), ("direct_modex", DmodexFn),
                ("rest", ctypes.c_void_p * (MODULE_SLOTS - 5))]


def library_path() -> str | None:
    """Where this host's PMIx library is (None: it has none)."""
    override = os.environ.get("PLURM_LIBPMIX")
    if override is not None:
        return override if override and os.path.isfile(override) else None
    for path in CANDIDATES:
        if os.path.isfile(path):
            return path
    return None


_LIB: Any = None


def load() -> Any:
    """The library with the prototypes plurm calls (loaded once per process)."""
    global _LIB
    if _LIB is not None:
        return _LIB
    path = library_path()
    if path is None:
        raise LibraryMissing("no PMIx library (libpmix.so.2) on this host")
    try:
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)  # (its own plugins resolve symbols in it)
    except OSError as exc:
        raise LibraryMissing(f"cannot load {path}: {exc}") from exc
    vp, sz, ch = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p
    protos = {
        "PMIx_server_init": (status_t, [ctypes.POINTER(PmixServerModule), vp, sz]),
        "PMIx_server_finalize": (status_t, []),
        "PMIx_server_register_nspace": (status_t, [ch, ctypes.c_int, vp, sz, vp, vp]),
        "PMIx_server_deregister_nspace": (None, [ch, vp, vp]),
        "PMIx_server_register_client": (status_t, [ctypes.POINTER(PmixProc), ctypes.c_uint32, ctypes.c_uint32,
                                                   vp, vp, vp]),
        "PMIx_server_setup_fork": (status_t, [ctypes.POINTER(PmixProc), ctypes.POINTER(ctypes.POINTER(ch))]),
        "PMIx_generate_regex": (status_t, [ch, ctypes.POINTER(vp)]),
        "PMIx_generate_ppn": (status_t, [ch, ctypes.POINTER(vp)]),
        "PMIx_Error_string": (ch, [status_t]),
        "PMIx_Get_version": (ch, []),
    }
    try:
        for name, (restype, argtypes) in protos.items():
            func = getattr(lib, name)
            func.restype, func.argtypes = restype, argtypes
    except AttributeError as exc:
        raise LibraryMissing(f"{path} is no PMIx server library: {exc}") from exc
    _LIB = lib
    return lib


def error_string(status: int) -> str:
    try:
        text = load().PMIx_Error_string(status)
    except LibraryMissing:
        text = None
    return f"{text.decode() if text else 'status'} ({status})"


class InfoArray:
    """A ``pmix_info_t[]`` built from Python values; it keeps every buffer it points to alive
    (the library copies what it is given, but only when the call is made)."""

    def __init__(self, items: list[tuple[str, int, Any]]) -> None:
        self.keep: list[Any] = []
        self.array = (PmixInfo * max(len(items), 1))()
        self.count = len(items)
        for info, (key, kind, value) in zip(self.array, items):
            info.key = key.encode()
            self._load(info.value, kind, value)

    def _load(self, target: PmixValue, kind: int, value: Any) -> None:
        target.type = kind
        if kind == PMIX_STRING:
            data = ctypes.c_char_p(str(value).encode())
            self.keep.append(data)
            target.data.string = data.value
        elif kind == PMIX_UINT32 or kind == PMIX_PROC_RANK:
            target.data.uint32 = int(value)
        elif kind == PMIX_UINT16:
            target.data.uint16 = int(value)
        elif kind == PMIX_BOOL:
            target.data.flag = bool(value)
        elif kind == PMIX_DATA_ARRAY:  # value: a list of (key, kind, value), an array of pmix_info_t
            inner = InfoArray(value)
            darray = PmixDataArray(PMIX_INFO, inner.count, ctypes.cast(inner.array, ctypes.c_void_p))
            self.keep.extend([inner, darray])
            target.data.darray = ctypes.cast(ctypes.pointer(darray), ctypes.c_void_p)
        else:
            raise ValueError(f"pmix type {kind} not supported here")

    @property
    def pointer(self) -> ctypes.c_void_p:
        return ctypes.cast(self.array, ctypes.c_void_p)


def proc(nspace: str, rank: int) -> PmixProc:
    return PmixProc(nspace.encode()[:PMIX_MAX_NSLEN], rank)

