"""scontrol ping and scontrol takeover: the controllers themselves, one by one.

``ping`` asks every SlurmctldHost in slurm.conf's order, each at its own address (a standby
answers a ping too), and prints Slurm's line per controller:
``Slurmctld(primary) at NAME is UP``, ``Slurmctld(backup) at NAME is DOWN`` (with more than
two: backup1, backup2, ...).  The exit status is 1 when none answers.

``takeover [INDEX]`` asks the backup (INDEX, default 1) to take control: it asks the active
controller for the lease, which hands over at its next renewal (corescheduler/lease.py).
"""

from __future__ import annotations

import sys
from typing import Any

PING_TIMEOUT_S = 2.0


def _mode(index: int, count: int) -> str:
    if index == 0:
        return "primary"
    return "backup" if count == 2 else f"backup{index}"


def _ask(settings: Any, host: str, msg_type: str, body: dict) -> dict:
    from plurm.wire.client import Connection

    conn = Connection(settings, host=host, timeout=PING_TIMEOUT_S)
    try:
        return conn.request(msg_type, body)
    finally:
        conn.close()


def ping(tool: Any, args: list[str]) -> None:
    from plurm.wire.client import ClientError, read_settings

    try:
        settings = read_settings()
    except ClientError as exc:
        tool.error(f"scontrol: error: {exc}")
        return
    count = len(settings.hosts)
    up = 0
    for index, (name, addr) in enumerate(zip(settings.host_names, settings.hosts)):
        try:
            _ask(settings, addr, "ping", {})
            state = "UP"
            up += 1
        except ClientError:
            state = "DOWN"
        sys.stdout.write(f"Slurmctld({_mode(index, count)}) at {name} is {state}\n")
    if not up:
        tool.rc = 1


def takeover(tool: Any, args: list[str]) -> None:
    from plurm.wire.client import ClientError, read_settings

    try:
        settings = read_settings()
        index = int(args[0]) if args else 1
    except ClientError as exc:
        tool.error(f"scontrol: error: {exc}")
        return
    except ValueError:
        tool.error(f"scontrol: error: Invalid takeover index: {args[0]}")
        return
    if not 0 < index < len(settings.hosts):
        tool.error("slurm_takeover error: No backup controller to take over")
        return
    try:
        _ask(settings, settings.hosts[index], "takeover", {})
    except ClientError as exc:
        tool.error(f"slurm_takeover error: {exc}")
