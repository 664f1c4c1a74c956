"""plurmrestd's side of the controller's wire API: one request as the REST caller.

Every request is sealed with plurmrestd's own AuthType credential with the caller's JWT in
front of it (wire/jwt_cred.py); the controller checks both and acts as the token's user
(corescheduler/jwt_auth.py).  plurmrestd itself decides nobody's identity: it only refuses,
without asking, a request that carries no token at all.

The wire client is synchronous (a ZMTP DEALER per connection); each request runs on a worker
thread of the event loop's executor with its own connection, so one slow answer never holds
the HTTP server.
"""

from __future__ import annotations

import asyncio
from typing import Any

from plurm.wire.client import ClientError, ClientSettings, Connection, read_settings
from plurm.wire.jwt_cred import TokenCredential

REQUEST_TIMEOUT_S = 10.0


class Caller:
    """Who a REST request says it is: the token (checked by the controller) and the user name
    it came with (``X-SLURM-USER-NAME``; empty with ``Authorization: Bearer``)."""

    __slots__ = ("token", "user_name")

    def __init__(self, token: str, user_name: str = "") -> None:
        self.token = token
        self.user_name = user_name


class Controller:
    """The controller of one slurm.conf, asked as REST callers."""

    def __init__(self, conf: str | None = None) -> None:
        self.settings: ClientSettings = read_settings(conf)

    @property
    def cluster(self) -> str:
        return self.settings.cluster_name

    def request_sync(self, caller: Caller, msg_type: str, body: dict, host: str | None = None) -> dict:
        conn = Connection(self.settings, host=host, timeout=REQUEST_TIMEOUT_S)
        try:
            conn.auth = TokenCredential(conn.auth, caller.token, caller.user_name)
        except ValueError as exc:
            raise ClientError(f"Invalid authentication token: {exc}", "AuthenticationError") from None
        try:
            return conn.request(msg_type, body)
        finally:
            conn.close()

    async def request(self, caller: Caller, msg_type: str, body: dict, host: str | None = None) -> Any:
        return await asyncio.get_running_loop().run_in_executor(None, self.request_sync, caller, msg_type, body,
                                                                host)
