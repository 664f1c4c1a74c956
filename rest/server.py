"""plurmrestd's HTTP side: the aiohttp application, authentication headers, start-up.

Usage, as slurmrestd's::

    plurmrestd [-f slurm.conf] [-a rest_auth/jwt] [-v] [-V] [HOST:PORT | unix:/path]...

Each request must carry a JWT from ``scontrol token``: ``X-SLURM-USER-TOKEN`` (with
``X-SLURM-USER-NAME``), or ``Authorization: Bearer <token>``.  plurmrestd refuses one
without a token (401) and passes the token on with every controller request; the controller
verifies it and acts as its user (corescheduler/jwt_auth.py).  A token the controller
refuses is a 401 too.  docs/rest.md lists the paths.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import time

from aiohttp import web

from plurm.rest import openapi, responses
from plurm.rest.ctld import Caller, Controller
from plurm.rest.routes import ROUTES as BASE_ROUTES
from plurm.rest.routes import Ctx, RestError
from plurm.rest.routes_db import DB_ROUTES
from plurm.rest.routes_more import MORE_ROUTES
from plurm.rest.routes_alloc import ALLOC_ROUTES
from plurm.rest.routes_resv import RESV_ROUTES
from plurm.rest.routes_jobctl import JOBCTL_ROUTES
from plurm.rest.routes_dbmore import DBMORE_ROUTES
from plurm.rest.routes_dbadd import DBADD_ROUTES
from plurm.rest.routes_nodes import NODES_ROUTES
from plurm.rest.routes_assoc import ASSOC_ROUTES
from plurm.rest import routes_metrics
from plurm.rest import routes_events

log = logging.getLogger("plurmrestd")

VERSIONS = ["v0.0.43", "v0.0.44", "v0.0.45"]
ROUTES = BASE_ROUTES + MORE_ROUTES + DB_ROUTES
ROUTES += ALLOC_ROUTES + RESV_ROUTES + JOBCTL_ROUTES + DBMORE_ROUTES + DBADD_ROUTES  # (issue 16)
ROUTES += NODES_ROUTES  # dynamic nodes: new/node/, DELETE node/{name} (issue 16 item 6)
ROUTES += ASSOC_ROUTES  # POST associations/, DELETE association(s)/
DEFAULT_LISTEN = "127.0.0.1:6820"  # slurmrestd's customary port
MAX_BODY = 16 * 1024 * 1024  # a job script larger than this is refused (413)


class AuthMissing(Exception):
    pass


def caller_of(request: web.Request) -> Caller:
    """The token and user name of a request; AuthMissing when it has no token."""
    token = request.headers.get("X-SLURM-USER-TOKEN", "").strip()
    user = request.headers.get("X-SLURM-USER-NAME", "").strip()
    if not token:
        scheme, _, value = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            token = value.strip()
    if not token:
        raise AuthMissing("no authentication token: X-SLURM-USER-TOKEN or Authorization: Bearer")
    return Caller(token, user)


def _wrap(version: str, handler, empty, ctl: Controller, started: float):
    async def answer(request: web.Request) -> web.Response:
        try:
            caller = caller_of(request)
        except AuthMissing as exc:
            return responses.failure(request, version, ctl.cluster, 401, f"Authentication failure: {exc}",
                                     "AuthenticationError", "rest_auth/jwt", empty())
        try:
            body, warnings = await handler(Ctx(request, version, caller, ctl, started))
        except RestError as exc:
            status = exc.status or responses.status_for(exc.code)
            return responses.failure(request, version, ctl.cluster, status, str(exc), exc.code, exc.source, empty())
        except Exception as exc:  # a bug in a handler: an error answer and a log, never a dead server
            log.exception("%s %s failed", request.method, request.path)
            return responses.failure(request, version, ctl.cluster, 500, f"internal error: {exc}", "InternalError",
                                     request.path, empty())
        return responses.ok(request, version, ctl.cluster, body, warnings)

    return answer


@web.middleware
async def unknown_paths(request: web.Request, handler):
    """A path or method plurmrestd does not have: Slurm's error shape, 404 (405 for a method)."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status not in (404, 405):
            raise
        cluster = request.app["ctl"].cluster
        return responses.failure(request, VERSIONS[-1], cluster, exc.status,
                                 f"Unable to find requested URL: {request.method} {request.path}",
                                 "NotFound", "plurmrestd")


def build_app(ctl: Controller) -> web.Application:
    app = web.Application(middlewares=[unknown_paths], client_max_size=MAX_BODY)
    app["ctl"] = ctl
    started = time.time()
    for version in VERSIONS:
        for method, path, handler, empty in ROUTES:
            if not openapi.offers(version, method, path):  # (a later version's path only)
                continue
            answer = _wrap(version, handler, empty, ctl, started)
            full = openapi.full_path(version, path)
            app.router.add_route(method, full, answer)
            other = full[:-1] if full.endswith("/") else full + "/"  # (slurmrestd takes both)
            app.router.add_route(method, other, answer)
    implemented = [(m, p) for m, p, _, _ in ROUTES]

    async def spec(request: web.Request) -> web.Response:
        return web.Response(text=openapi.document(VERSIONS, implemented), content_type="application/json")

    for path in ("/openapi.json", "/openapi/v3", "/openapi"):
        app.router.add_get(path, spec)
    routes_metrics.register(app, ctl)  # /metrics, /livez, /readyz, /healthz (no token: routes_metrics.py)
    routes_events.register(app, ctl, caller_of, AuthMissing)  # GET /plurm/v0/events: the event stream as SSE (routes_events.py)
    return app


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="plurmrestd", description="slurmrestd-compatible REST API for plurm")
    parser.add_argument("-f", dest="conf", help="slurm.conf (default: as the commands find it)")
    parser.add_argument("-a", dest="auth", default="rest_auth/jwt",
                        help="authentication plugins (only rest_auth/jwt)")
    parser.add_argument("-s", dest="openapi", default="", help="OpenAPI plugins (accepted, ignored)")
    parser.add_argument("-d", dest="data_parser", default="", help="data_parser plugins (accepted, ignored)")
    parser.add_argument("-v", dest="verbose", action="count", default=0)
    parser.add_argument("-V", dest="version", action="store_true")
    parser.add_argument("-D", dest="foreground", action="store_true", help="(always in the foreground)")
    parser.add_argument("listen", nargs="*", help="HOST:PORT or unix:/path (default 127.0.0.1:6820)")
    return parser.parse_args(argv)


def _sites(runner: web.AppRunner, listen: list[str]) -> list[web.BaseSite]:
    sites: list[web.BaseSite] = []
    for item in listen or [DEFAULT_LISTEN]:
        if item.startswith("unix:"):
            sites.append(web.UnixSite(runner, item[5:]))
            continue
        host, sep, port = item.rpartition(":")
        if not sep or not (port.isascii() and port.isdigit()):
            raise SystemExit(f"plurmrestd: error: invalid listen address {item!r} (HOST:PORT or unix:/path)")
        sites.append(web.TCPSite(runner, host.strip("[]") or "0.0.0.0", int(port)))
    return sites


async def serve(ctl: Controller, listen: list[str]) -> None:
    runner = web.AppRunner(build_app(ctl), access_log=logging.getLogger("plurmrestd.access"))
    await runner.setup()
    for site in _sites(runner, listen):
        await site.start()
        log.info("plurmrestd listening on %s (cluster %s, %s)", site.name, ctl.cluster, ", ".join(VERSIONS))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("plurmrestd stopping")
    await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.version:
        from plurm import SLURM_COMPAT_VERSION, __version__

        print(f"plurmrestd {__version__} (slurm {SLURM_COMPAT_VERSION})")
        return 0
    logging.basicConfig(level=logging.DEBUG if args.verbose > 1 else logging.INFO,
                        format="%(asctime)s %(name)s: %(levelname)s: %(message)s")
    plugins = [p.strip() for p in args.auth.split(",") if p.strip()]
    if any(p not in ("rest_auth/jwt", "jwt", "list") for p in plugins):
        print(f"plurmrestd: error: unsupported authentication plugin(s) {args.auth}: only rest_auth/jwt",
              file=sys.stderr)
        return 1
    from plurm.wire.client import ClientError

    try:
        ctl = Controller(args.conf or os.environ.get("SLURM_CONF") or None)
    except ClientError as exc:
        print(f"plurmrestd: error: {exc}", file=sys.stderr)
        return 1
    try:
        asyncio.run(serve(ctl, args.listen))
    except OSError as exc:
        print(f"plurmrestd: error: cannot listen: {exc}", file=sys.stderr)
        return 1
    return 0
