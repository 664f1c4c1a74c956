"""scontrol token [lifespan=N] [username=U]: a JWT from the controller, printed as
``SLURM_JWT=<token>`` (for ``export $(scontrol token)`` and plurmrestd's headers).

The controller signs it with ``AuthAltParameters=jwt_key=`` (corescheduler/jwt_auth.py);
only root and SlurmUser may name another user.  Slurm 22.05's words where it fails (captured
on the real Slurm: tests/rest/reference/rest/scontrol_token.txt): an unknown word is
"Invalid option: `word`"; every failure ends with "Error fetching token" and exit 1; one the
controller explains comes first as "scontrol: error: slurm_fetch_token: error with request: ...",
except that tokens are not configured, which Slurm reports with the last line alone (plurm
says why with -v).
"""

from __future__ import annotations

import sys
from typing import Any

FAILED = "Error fetching token"


def parse(args: list[str]) -> tuple[int | None, str | None, str | None]:
    """(lifespan, username, error text): Slurm's keys, case-insensitive, ``key=value``."""
    lifespan: int | None = None
    username: str | None = None
    for word in args:
        key, sep, value = word.partition("=")
        lowered = key.lower()
        if sep and lowered == "lifespan":
            if not (value.isascii() and value.isdigit()) or int(value) <= 0:
                return None, None, f"invalid lifespan: {value}"
            lifespan = int(value)
        elif sep and lowered == "username":
            username = value
        else:
            return None, None, f"Invalid option: `{word}`"
    return lifespan, username, None


def token(tool: Any, args: list[str]) -> None:
    from plurm.wire.client import ClientError

    lifespan, username, problem = parse(args)
    if problem is not None:
        if problem.startswith("Invalid option"):
            sys.stderr.write(problem + "\n")
        else:
            _fail(tool, problem, quiet_reason=True)
            return
        tool.rc = 1
        return
    body: dict = {}
    if lifespan is not None:
        body["lifespan"] = lifespan
    if username:
        body["username"] = username
    try:
        reply = tool.request("auth_token", body)
    except ClientError as exc:
        _fail(tool, str(exc), quiet_reason=exc.code == "NotSupported")
        return
    sys.stdout.write(f"SLURM_JWT={reply['token']}\n")


def _fail(tool: Any, reason: str, quiet_reason: bool) -> None:
    if not quiet_reason:
        sys.stderr.write(f"scontrol: error: slurm_fetch_token: error with request: {reason}\n")
    elif getattr(tool, "verbose", 0):
        sys.stderr.write(f"scontrol: {reason}\n")
    sys.stderr.write(FAILED + "\n")
    tool.rc = 1
