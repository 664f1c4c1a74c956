"""What every plurmrestd answer is made of: ``meta``, ``errors``, ``warnings`` (the data_parser
envelope of plurm.tools.dataparser.values), the HTTP status of a failure, and JSON bodies.

HTTP status, as slurmrestd sets it: 200 with the objects; 401 when the request is not
authenticated (no token, or one the controller refused); 400 for a request it cannot read;
404 for an unknown job, node, partition or path; 500 for any other error the controller
reports.  Each failure has Slurm's error text and number in ``errors``, and a log line.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from aiohttp import web

from plurm.tools.dataparser import values
from plurm.tools.dataparser.versions import for_version

log = logging.getLogger("plurmrestd")

# Slurm's error numbers (slurm_errno.h) for what the controller's error codes mean.
AUTH_ERROR = 1011  # SLURM_PROTOCOL_AUTHENTICATION_ERROR: "Protocol authentication error"
ERRNO = {"InvalidJobId": values.ESLURM_INVALID_JOB_ID, "InvalidNodeName": values.ESLURM_INVALID_NODE_NAME,
         "InvalidPartitionName": values.ESLURM_INVALID_PARTITION_NAME, "AccessDenied": 2002,
         "InvalidUserId": 2002, "AuthenticationError": AUTH_ERROR, "ConnectError": 1007, "Timeout": 5004,
         "InvalidReservation": 2050, "Busy": 11}  # (Busy: EAGAIN, corescheduler/admission.py)
NOT_FOUND_CODES = frozenset({"InvalidJobId", "InvalidNodeName", "InvalidPartitionName", "InvalidReservation",
                             "NotFound"})


def meta(request: web.Request, version: str, cluster: str) -> dict:
    user = request.headers.get("X-SLURM-USER-NAME", "")
    return values.meta(version, [request.method, request.path], cluster, user, "",
                       request.remote or "", accounting=request.path.startswith("/slurmdb/"))


def dumps(obj: Any) -> str:
    return json.dumps(obj, indent=2)


def ok(request: web.Request, version: str, cluster: str, body: dict,
       warnings: list[dict] | None = None) -> web.Response:
    obj = values.envelope(body, meta(request, version, cluster), None, warnings)
    return web.json_response(for_version(obj, version), dumps=dumps)


def failure(request: web.Request, version: str, cluster: str, status: int, message: str, code: str,
            source: str, body: dict | None = None) -> web.Response:
    """An error answer: ``body`` holds the objects the path's schema requires (empty lists)."""
    log.warning("%s %s -> %d: %s (%s)", request.method, request.path, status, message, code)
    error = values.error(message, ERRNO.get(code, -1), message, source)
    obj = values.envelope(dict(body or {}), meta(request, version, cluster), [error])
    return web.json_response(for_version(obj, version), status=status, dumps=dumps)


def status_for(code: str) -> int:
    if code == "AuthenticationError":
        return 401
    if code in NOT_FOUND_CODES:
        return 404
    if code in ("BadRequest", "MalformedMessage", "InvalidRequest"):
        return 400
    return 500
