"""scontrol create|update|delete|show reservation, and sinfo -T (issue 14).

The words go to the controller as given (corescheduler/core_resv.py reads and checks them);
what comes back is printed in Slurm 22.05's words and formats (compared with the real
Slurm: tests/tools/reference/reservations).
"""

from __future__ import annotations

import sys
import time as _time
from typing import Any

# Keys of a reservation request (Slurm's, by their lower-case spelling), and the ones
# scontrol accepts that plurm keeps no record of (refused with Slurm's complaint).
_KEYS = {"reservationname", "reservation", "starttime", "endtime", "duration", "nodes", "nodecnt",
         "nodecount", "users", "accounts", "partitionname", "partition", "flags", "features", "groups"}


def fields_of(scontrol: Any, words: list[str], what: str) -> dict[str, str] | None:
    """Key=Value words as a table (Flags+=X, Flags-=X as "+X", "-X"); None after a complaint."""
    fields: dict[str, str] = {}
    for word in words:
        key, sep, value = word.partition("=")
        if not sep:
            scontrol.error(f"scontrol: error: Invalid input: {word}")
            scontrol.error("Request aborted")
            return None
        mode = ""
        if key[-1:] in "+-" and key[:-1].lower() == "flags":
            key, mode = key[:-1], key[-1]
        if key.lower() not in _KEYS:
            scontrol.error(f"scontrol: error: Unknown parameter {word}.  No reservation {what}.")
            return None
        if key.lower() == "flags" and not _flags_ok(scontrol, value, what):
            return None
        if key.lower() in ("starttime", "endtime"):
            value = _epoch(scontrol, value)
            if value is None:
                return None
        fields[key] = mode + value
    return fields


def _epoch(scontrol: Any, value: str) -> str | None:
    """A time word as seconds since the epoch, read here as Slurm's scontrol reads it (in the
    local time zone); now[+N] is left to the controller's clock."""
    if value.strip().lower().startswith("now"):
        return value
    from plurm.grammar.structvalues import parse_begin
    from plurm.grammar.values import OptionValueError

    try:
        return str(parse_begin(value, "begin"))
    except (OptionValueError, ValueError, OverflowError):
        scontrol.error(f"scontrol: error: Invalid time specification: {value}")  # (plurm's words)
        return None


def _flags_ok(scontrol: Any, value: str, what: str) -> bool:
    from plurm.corescheduler.reservations import FLAGS_ACTING, FLAGS_KEPT

    for word in (w.strip().upper() for w in value.split(",")):
        if word and word not in FLAGS_ACTING and word not in FLAGS_KEPT and word != "NO_HOLD_JOBS":
            scontrol.error(f"scontrol: error: Error parsing flags {word}.  No reservation {what}.")
            return False
    return True


def _create_checks(scontrol: Any, fields: dict[str, str]) -> bool:
    """What Slurm's scontrol checks itself before it asks the controller."""
    keys = {k.lower() for k, v in fields.items() if v}
    if "starttime" not in keys:
        scontrol.error("scontrol: error: A start time must be given.  No reservation created.")
        return False
    if not keys & {"users", "accounts", "groups"}:
        scontrol.error("scontrol: error: Either Users/Groups and/or Accounts must be specified.  "
                       "No reservation created.")
        return False
    return True


def create(scontrol: Any, args: list[str]) -> None:
    from plurm.wire.client import ClientError

    words = args[1:] if args and "=" not in args[0] else args  # "create reservation k=v ..."
    if args and "=" not in args[0] and not "reservation".startswith(args[0].lower()):
        scontrol.error(f"invalid entity:{args[0]} for keyword:create")
        return
    fields = fields_of(scontrol, words, "created")
    if fields is None:
        return
    if not fields:
        scontrol.error("scontrol: error: too few arguments for keyword:create")
        return
    if not _create_checks(scontrol, fields):
        return
    try:
        reply = scontrol.request("reservation", {"action": "create", "fields": fields})
    except ClientError as exc:
        scontrol.error(f"Error creating the reservation: {exc}")
        if str(exc) == "Requested nodes are busy":  # (with Nodes= too, as the real 22.05)
            scontrol.error("Note, unless nodes are directly requested a reservation must exist in a single "
                           "partition.\nIf no partition is requested the default partition is assumed.")
        return
    sys.stdout.write(f"Reservation created: {reply.get('name')}\n")


def update(scontrol: Any, pairs: list[tuple[str, str]]) -> None:
    from plurm.wire.client import ClientError

    fields = fields_of(scontrol, [f"{k}={v}" for k, v in pairs], "update")
    if fields is None:
        scontrol.error("slurm_update error: No error")  # (the real 22.05 says so too)
        return
    try:
        scontrol.request("reservation", {"action": "update", "fields": fields})
    except ClientError as exc:
        scontrol.error(f"Error updating the reservation: {exc}")
        scontrol.error(f"slurm_update error: {exc}")
        return
    sys.stdout.write("Reservation updated.\n")


def delete(scontrol: Any, args: list[str]) -> None:
    """scontrol delete ReservationName=NAME (or ``delete reservation NAME``)."""
    from plurm.wire.client import ClientError

    name = None
    if len(args) == 1 and "=" in args[0]:
        key, _, name = args[0].partition("=")
        if key.lower() not in ("reservationname", "reservation"):
            name = None
    elif len(args) == 2 and "reservation".startswith(args[0].lower()):
        name = args[1]
    if not name:
        scontrol.error(f"invalid entity:{' '.join(args)} for keyword:delete")
        return
    try:
        scontrol.request("reservation", {"action": "delete", "name": name})
    except ClientError as exc:
        scontrol.error(f"delete_reservation {args[0]}: {exc}")  # (the word as given, as Slurm's)


def fetch(scontrol: Any, name: str | None) -> dict[str, Any] | None:
    from plurm.wire.client import ClientError

    try:
        return scontrol.request("reservation", {"action": "show", "name": name})
    except ClientError as exc:
        scontrol.error(f"slurm_load_reservations error: {exc}")
        return None


def show(scontrol: Any, rest: list[str]) -> None:
    name = rest[0] if rest else None
    reply = fetch(scontrol, name)
    if reply is None:
        return
    records = reply.get("reservations", [])
    if name and not records:
        sys.stdout.write(f"Reservation {name} not found\n")
        scontrol.rc = 1
        return
    if not records:
        sys.stdout.write("No reservations in the system\n")
        return
    sys.stdout.write("".join(format_reservation(r, scontrol.oneliner) for r in records))


def _iso(ts: float) -> str:
    return _time.strftime("%Y-%m-%dT%H:%M:%S", _time.localtime(ts))


def _duration(seconds: float) -> str:
    from plurm.grammar.timefmt import format_duration

    return format_duration(int(seconds))


def _names(values: list[str]) -> str:
    return ",".join(values) if values else "(null)"


def format_reservation(r: dict[str, Any], oneliner: bool = False) -> str:
    """One reservation as scontrol show reservation prints it."""
    from plurm.corescheduler.reservations import flag_text
    from plurm.grammar.hostlist import compress

    nodes = r.get("nodes") or []
    lines = [
        f"ReservationName={r['name']} StartTime={_iso(r['start_time'])} EndTime={_iso(r['end_time'])} "
        f"Duration={_duration(r['end_time'] - r['start_time'])}",
        f"Nodes={compress(nodes) if nodes else '(null)'} NodeCnt={len(nodes)} CoreCnt={r.get('cores', 0)} "
        f"Features={r.get('features') or '(null)'} PartitionName={r.get('partition') or '(null)'} "
        f"Flags={flag_text(r.get('flags') or [])}",
        f"TRES=cpu={r.get('cores', 0)}",
        f"Users={_names(r.get('users') or [])} Groups={_names(r.get('groups') or [])} "
        f"Accounts={_names(r.get('accounts') or [])} "
        f"Licenses=(null) State={r['state']} BurstBuffer=(null) Watts=n/a",
        "MaxStartDelay=(null)",
    ]
    if oneliner:
        return " ".join(lines) + "\n"
    return "\n   ".join(lines) + "\n\n"


def sinfo_table(reply: dict[str, Any]) -> str:
    """sinfo -T: RESV_NAME STATE START_TIME END_TIME DURATION NODELIST."""
    from plurm.grammar.hostlist import compress

    records = reply.get("reservations", [])
    if not records:
        return "No reservations in the system\n"
    rows = [("RESV_NAME", "STATE", "START_TIME", "END_TIME", "DURATION", "NODELIST")]
    for r in records:
        rows.append((r["name"], r["state"], _iso(r["start_time"]), _iso(r["end_time"]),
                     _duration(r["end_time"] - r["start_time"]), compress(r.get("nodes") or [])))
    # Slurm's columns: the name left in 10 (cut), the state right in 8, the times right in 20,
    # the duration right in 12, then the nodes.
    return "".join(f"{n[:10]:<10} {s:>8} {b:>20} {e:>20} {d:>12}  {nodes}\n" for n, s, b, e, d, nodes in rows)


def sinfo_reservations() -> int:
    """sinfo -T (its exit status)."""
    from plurm.wire.client import ClientError, request

    try:
        reply = request("reservation", {"action": "show"})
    except ClientError as exc:
        sys.stderr.write(f"slurm_load_reservations: {exc}\n")
        return 1
    sys.stdout.write(sinfo_table(reply))
    return 0
