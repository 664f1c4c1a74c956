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


def local_factory(key_path: str, auth_info: dict[str, str]) -> AuthPlugin:
    return LocalAuth(key_path)


def munge_factory(key_path: str, auth_info: dict[str, str]) -> AuthPlugin:
    from plurm.wire.auth_munge import MungeAuth

    return MungeAuth(auth_info)


_BUILTIN = {"auth/local": local_factory, "auth/munge": munge_factory}


def load(auth_type: str | None, key_path: str, auth_info: str | None = None) -> AuthPlugin:
    """The plugin slurm.conf's AuthType names (``auth/local`` when unset)."""
    name = (auth_type or DEFAULT_AUTH_TYPE).strip().lower()
    factory = _BUILTIN.get(name)
    if factory is None:
        from plurm.plugins.manager import PluginError, get_plugin_manager
        from plurm.plugins.types import resolve

        short = name.split("/", 1)[1] if name.startswith("auth/") else name
        try:
            factory = resolve(get_plugin_manager().get_auth_type(short).factory)
        except PluginError as exc:
            raise AuthError(str(exc)) from None
    return factory(key_path=key_path, auth_info=parse_auth_info(auth_info))
