"""plurm's built-in credential plugins, registered as a plugin.

``AuthType=auth/local`` and ``auth/munge`` select them.  The commands resolve these two
names without the plugin manager (wire/authtype.py); the records here make them appear
beside a site's own plugins (``plurm plugins``, duplicate-name checks) through the same
hook a package uses.
"""

from __future__ import annotations

from plurm.plugins.hookspecs import hookimpl
from plurm.plugins.types import AuthTypePlugin

BUILTIN_AUTH: tuple[AuthTypePlugin, ...] = (
    AuthTypePlugin(name="local", factory="plurm.wire.authtype:local_factory",
                   description="the embedded cluster's: a key only its owner can read; serves that user alone"),
    AuthTypePlugin(name="munge", factory="plurm.wire.authtype:munge_factory",
                   description="credentials from the munge daemon (AuthInfo=socket=PATH,ttl=N), as Slurm's"),
)


@hookimpl(trylast=True)
def plurm_register_auth_types() -> tuple[AuthTypePlugin, ...]:
    return BUILTIN_AUTH
