"""plurmrestd's /metrics, /metrics/<kind> and the /livez, /readyz, /healthz probes.

Slurm 25.11 serves these on slurmctld's port; plurm's controller speaks only ZeroMQ, so
plurmrestd serves them and asks the controller (the ``stats`` request).

Authentication, as Slurm 25.11's metrics endpoints:

* ``MetricsAuthUsers=`` set: a JWT is required (401 without); the controller lets only those
  users, root and SlurmUser read them (403 otherwise);
* otherwise no authentication: plurmrestd asks with its own credential; with ``PrivateData``
  set and no ``MetricsParameters=ignore_private_data`` the controller refuses (403: off).

The probes never need a token (a kubelet has none), and say as little as Slurm's: ``/livez``
200 while plurmrestd serves; ``/readyz`` 200 when a controller answers a ping and is in control with a
working state store (each SlurmctldHost in turn), else 503;
``/healthz`` 200 while plurmrestd serves (the controller's state is readyz's business, so a
controller outage makes Kubernetes stop routing to plurmrestd, not restart it).
"""

from __future__ import annotations

import asyncio
import logging

from aiohttp import web

from plurm.rest import openmetrics
from plurm.rest.ctld import Controller
from plurm.wire.client import ClientError, Connection
from plurm.wire.jwt_cred import TokenCredential

log = logging.getLogger("plurmrestd")

PROBE_TIMEOUT_S = 3.0
METRICS_TIMEOUT_S = 10.0


def _conf_words(ctl: Controller, key: str) -> set[str]:
    from plurm.grammar.slurmconf import load_slurm_conf

    try:
        value = load_slurm_conf(ctl.settings.conf).get(key)
    except Exception:  # an unreadable slurm.conf: the controller's rules still apply
        return set()
    return {w.strip() for w in (value or "").split(",") if w.strip()}


def _ask(ctl: Controller, token: str | None, user: str, msg_type: str, body: dict, timeout: float,
         host: str | None = None) -> dict:
    conn = Connection(ctl.settings, host=host, timeout=timeout)
    try:
        if token:
            try:
                conn.auth = TokenCredential(conn.auth, token, user)
            except ValueError as exc:
                raise ClientError(f"Invalid authentication token: {exc}", "AuthenticationError") from None
        return conn.request(msg_type, body)
    finally:
        conn.close()


def _token(request: web.Request) -> tuple[str, str]:
    token = request.headers.get("X-SLURM-USER-TOKEN", "").strip()
    user = request.headers.get("X-SLURM-USER-NAME", "").strip()
    if not token:
        scheme, _, value = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer":
            token = value.strip()
    return token, user


def _plain(status: int, message: str) -> web.Response:
    return web.Response(status=status, text=message + "\n", content_type="text/plain")


def metrics_handler(kind: str | None):
    async def answer(request: web.Request) -> web.Response:
        ctl: Controller = request.app["ctl"]
        token, user = _token(request)
        if not token and request.app["metrics_auth_users"]:
            return _plain(401, "Authentication failure: MetricsAuthUsers is set: a token is required")
        try:
            reply = await asyncio.get_running_loop().run_in_executor(
                None, _ask, ctl, token or None, user, "stats",
                {"metrics": True, "counters_only": kind == "scheduler"},  # (no pass over the jobs)
                METRICS_TIMEOUT_S)
        except ClientError as exc:
            status = 403 if exc.code in ("AccessDenied", "InvalidUserId") else \
                401 if exc.code == "AuthenticationError" else 503
            log.warning("%s refused: %s (%s)", request.path, exc, exc.code)
            return _plain(status, str(exc))
        return web.Response(text=openmetrics.text(kind, reply), headers={"Content-Type": openmetrics.CONTENT_TYPE})

    return answer


async def livez(request: web.Request) -> web.Response:
    return _plain(200, "ok")


def not_ready(ctl: Controller) -> str | None:
    """Why no controller can serve (None: one answers, is in control and its store writes);
    each SlurmctldHost in turn, so a backup that took over keeps plurmrestd ready."""
    why = "controller unreachable"
    for host in ctl.settings.hosts:
        try:
            answer = _ask(ctl, None, "", "ping", {}, PROBE_TIMEOUT_S, host)
        except ClientError as exc:
            why = f"controller unreachable ({exc.code})"
            continue
        if answer.get("active", True) and answer.get("store_ok", True):
            return None
        why = "no controller in control" if not answer.get("active", True) else "the controller's state store fails"
    return why


async def readyz(request: web.Request) -> web.Response:
    why = await asyncio.get_running_loop().run_in_executor(None, not_ready, request.app["ctl"])
    return _plain(200, "ok") if why is None else _plain(503, f"not ready: {why}")


def register(app: web.Application, ctl: Controller) -> None:
    """Add the metrics paths and the probes (rest/server.py's build_app calls it)."""
    app["metrics_auth_users"] = _conf_words(ctl, "MetricsAuthUsers")
    app.router.add_get("/metrics", metrics_handler(None))
    for kind in openmetrics.KINDS:
        app.router.add_get(f"/metrics/{kind}", metrics_handler(kind))
    app.router.add_get("/livez", livez)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/healthz", livez)
