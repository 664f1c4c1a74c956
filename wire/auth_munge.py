"""auth/munge: credentials from the munge daemon, through libmunge (ctypes).

munged runs privileged on every host with a key shared by the cluster's hosts; a
process asks it (over a local socket, where the kernel tells munged who is asking)
for a credential, and any host's munged turns a credential back into that uid and
gid.  The payload of each credential here is the digest of the message it comes
with, so a credential cannot be moved onto another message; munged refuses a
credential that is expired (TTL, 300 s by default) or already decoded (replay).

slurm.conf: ``AuthType=auth/munge``, and ``AuthInfo=socket=PATH,ttl=SECONDS`` as
Slurm reads them.  libmunge is Debian's ``libmunge2`` (installed with ``munge``);
it is loaded when the plugin is first used, never on import of plurm.
"""

from __future__ import annotations

import ctypes

from plurm.wire.auth import AuthError, Verified

MUNGE_OPT_TTL = 4
MUNGE_OPT_SOCKET = 8
EMUNGE_SOCKET = 6
EMUNGE_CRED_EXPIRED = 15
EMUNGE_CRED_REWOUND = 16
EMUNGE_CRED_REPLAYED = 17

_lib: ctypes.CDLL | None = None


def _libmunge() -> ctypes.CDLL:
    global _lib
    if _lib is None:
        try:  # the soname first: find_library runs ldconfig (tens of ms of every command)
            lib = ctypes.CDLL("libmunge.so.2")
        except OSError:
            from ctypes.util import find_library

            path = find_library("munge")
            try:
                lib = ctypes.CDLL(path or "libmunge.so")
            except OSError as exc:
                raise AuthError(f"auth/munge: cannot load libmunge ({exc}); install Debian's munge package") from None
        lib.munge_ctx_create.restype = ctypes.c_void_p
        lib.munge_ctx_destroy.argtypes = [ctypes.c_void_p]
        lib.munge_ctx_set.restype = ctypes.c_int
        lib.munge_encode.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.c_void_p, ctypes.c_void_p,
                                     ctypes.c_int]
        lib.munge_encode.restype = ctypes.c_int
        lib.munge_decode.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                                     ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_uint32),
                                     ctypes.POINTER(ctypes.c_uint32)]
        lib.munge_decode.restype = ctypes.c_int
        lib.munge_strerror.argtypes = [ctypes.c_int]
        lib.munge_strerror.restype = ctypes.c_char_p
        lib.munge_ctx_strerror.argtypes = [ctypes.c_void_p]
        lib.munge_ctx_strerror.restype = ctypes.c_char_p
        _lib = lib
    return _lib


_libc: ctypes.CDLL | None = None


def _free(pointer: int | None) -> None:
    """libmunge's buffers are malloc'ed: the caller frees them."""
    global _libc
    if pointer:
        if _libc is None:
            _libc = ctypes.CDLL(None)
            _libc.free.argtypes = [ctypes.c_void_p]
        _libc.free(pointer)


class MungeAuth:
    name = "auth/munge"

    def __init__(self, info: dict[str, str]) -> None:
        self.lib = _libmunge()
        self.socket = info.get("socket") or None
        self.ttl = int(info["ttl"]) if info.get("ttl") else None
        ctx = self.lib.munge_ctx_create()
        if not ctx:
            raise AuthError("auth/munge: cannot create a munge context")
        self.ctx = ctypes.c_void_p(ctx)
        if self.socket:
            self._set(MUNGE_OPT_SOCKET, ctypes.c_char_p(self.socket.encode()))
        if self.ttl is not None:
            self._set(MUNGE_OPT_TTL, ctypes.c_int(self.ttl))

    def _set(self, option: int, value: ctypes._SimpleCData) -> None:
        if self.lib.munge_ctx_set(self.ctx, option, value) != 0:
            raise AuthError(f"auth/munge: {self.lib.munge_ctx_strerror(self.ctx).decode()}")

    def credential(self, digest: bytes) -> bytes:
        cred = ctypes.c_char_p()
        err = self.lib.munge_encode(ctypes.byref(cred), self.ctx, digest, len(digest))
        try:
            if err != 0:
                where = f" (socket {self.socket})" if self.socket else ""
                raise AuthError(f"auth/munge: Munge encode failed: {self._error(err)}{where}")
            return bytes(cred.value or b"")
        finally:
            _free(ctypes.cast(cred, ctypes.c_void_p).value)

    def verify(self, credential: bytes, digest: bytes, allow_replay: bool = False) -> Verified:
        payload = ctypes.c_void_p()
        length = ctypes.c_int()
        uid, gid = ctypes.c_uint32(), ctypes.c_uint32()
        err = self.lib.munge_decode(bytes(credential), self.ctx, ctypes.byref(payload), ctypes.byref(length),
                                    ctypes.byref(uid), ctypes.byref(gid))
        try:
            if err != 0 and not (allow_replay and err == EMUNGE_CRED_REPLAYED):
                raise AuthError(f"auth/munge: Munge decode failed: {self._error(err)}")
            data = ctypes.string_at(payload.value, length.value) if payload.value else b""
        finally:
            _free(payload.value)
        if data != digest:
            raise AuthError("auth/munge: credential for another message")
        return Verified(uid.value, gid.value)

    def _error(self, err: int) -> str:
        text = self.lib.munge_ctx_strerror(self.ctx) or self.lib.munge_strerror(err)
        return text.decode(errors="replace")

    def __del__(self) -> None:
        ctx = getattr(self, "ctx", None)
        if ctx is not None and getattr(self, "lib", None) is not None:
            self.lib.munge_ctx_destroy(ctx)
