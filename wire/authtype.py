"""slurm.conf's AuthType and AuthInfo: which credential plugin a process uses (wire/auth.py).

The built-in names are resolved without the plugin manager (pluggy and the entry-point
scan cost every user command milliseconds); any other name is looked up through the
``plurm_auth_types`` hook.
"""

from __future__ import annotations

from plurm.wire.auth import AuthError, AuthPlugin, LocalAuth

DEFAULT_AUTH_TYPE = "auth/local"


def parse_auth_info(text: str | None) -> dict[str, str]:
    """slurm.conf's AuthInfo: comma-separated key=value (socket=..., ttl=...)."""
    info: dict[str, str] = {}
    for item in (text or "").split(","):
        key, sep, value = item.strip().partition("=")
        if key:
            info[key.lower()] = value if sep else ""
    return info


def load(auth_type: str | None, key_path: str, auth_info: str | None = None) -> AuthPlugin:
    """The plugin slurm.conf's AuthType names (``auth/local`` when unset)."""
    name = (auth_type or DEFAULT_AUTH_TYPE).strip().lower()
    if name == "auth/local":
        return LocalAuth(key_path)
    if name == "auth/munge":
        from plurm.wire.auth_munge import MungeAuth

        return MungeAuth(parse_auth_info(auth_info))
    from plurm.plugins.manager import get_plugin_manager

    factory = get_plugin_manager().auth_types().get(name)
    if factory is None:
        raise AuthError(f"unknown AuthType {auth_type!r} (built in: auth/local, auth/munge)")
    return factory(key_path=key_path, auth_info=parse_auth_info(auth_info))
