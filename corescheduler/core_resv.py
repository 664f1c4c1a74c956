"""Advance reservations in the core (a mixin of ``ClusterCore``): create, update, delete,
what time passing does to them, and what they do to scheduling.

- A job with ``--reservation=R`` runs only on R's nodes (FLEX: on others too), only while R
  is ACTIVE, and only if its user or account is in R; the submission is refused otherwise
  ("Access denied to requested reservation"), as Slurm's is.  It waits with reason
  ``Reservation`` while R is INACTIVE.
- Any other job never starts on a reserved node when its run (now .. now + time limit, no
  limit: forever) would meet the reservation: the node is excluded from its demand, so the
  main pass and backfill alike place it elsewhere or leave it waiting.  When nothing is left
  for it, it waits as the real 22.05 shows it: ``ReqNodeNotAvail, May be reserved for other
  job`` (MAINT or not: checked), or ``Resources`` while other nodes are only busy.
- ``tick`` makes a reservation ACTIVE at its start, ends it at its end (DAILY and WEEKLY
  move on by a day or a week) and asks for a scheduling pass at both.

The reservations are durable through ``take_reservations``/``restore_reservations`` (JSON in
the store's meta table, as core_nodeadmin keeps the nodes' states).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Callable, Iterator
from typing import Any

import msgspec

from plurm.corescheduler import authz
from plurm.corescheduler import reservations as rs
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.reservations import AdvanceReservation
from plurm.wire import model

log = logging.getLogger("plurmctld")

REASON_RESERVATION = "Reservation"
# What the real 22.05 shows for a job that only reserved nodes could hold, MAINT or not
# (tests/tools/reference/reservations/squeue_reasons.txt).
REASON_RESV_NODES = "ReqNodeNotAvail, May be reserved for other job"
REASON_RESV_DELETED = "ReservationDeleted"
ACCESS_DENIED_RESV = "Access denied to requested reservation"
_RUNNING = (model.RUNNING, model.SUSPENDED)
_HELD_REASONS = ("Resources", "PartitionConfig")

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(list[AdvanceReservation]).decode


# The keys a request may carry (as scontrol_resv sends them: lower-cased here).
_KEYS = frozenset({"reservationname", "reservation", "starttime", "endtime", "duration", "nodes", "nodecnt",
                   "nodecount", "users", "accounts", "groups", "partitionname", "partition", "flags", "features"})


def _known(fields: dict[str, str], what: str) -> dict[str, str]:
    """The request's keys in lower case; one plurm does not know refuses it, as scontrol does."""
    known = {k.lower(): v for k, v in fields.items()}
    for key, value in fields.items():
        if key.lower() not in _KEYS:
            raise RequestError(f"Unknown parameter {key[:64]}={value[:64]}.  No reservation {what}.",
                               "InvalidReservation")
    return known


@contextlib.contextmanager
def _logged(action: str, who: Identity, fields: dict[str, str]) -> Iterator[None]:
    """A refused reservation request is logged (bounded: a hostile request may be long)."""
    try:
        yield
    except RequestError as exc:
        log.warning("reservation %s by %s refused: %s (%.200r)", action, who.user, exc, fields)
        raise


class AdvanceReservations:
    """The reservations of the cluster: ``self.resv`` (name -> record), created on first use
    so that ``ClusterCore.__init__`` needs no line for it."""

    nodes: dict[str, model.Node]
    partitions: dict[str, model.Partition]
    jobs: dict[int, model.Job]
    accounts: Any
    settings: Any
    need_schedule: bool
    _save: Callable[[model.Job], None]  # (ClusterCore's: the job record made durable)
    immediate_behind: Callable[[model.Job], bool]  # (core_immediate.py)

    @property
    def resv(self) -> dict[str, AdvanceReservation]:
        table = self.__dict__.get("_resv")
        if table is None:
            table = self.__dict__["_resv"] = {}
            self.__dict__["_resv_dirty"] = False
            self.__dict__["_resv_held"] = {}
            self.__dict__["_resv_next_change"] = float("inf")
        return table

    def _resv_changed(self, now: float) -> None:
        self.__dict__["_resv_dirty"] = True
        self.need_schedule = True
        self._resv_plan_change(now)

    def _resv_plan_change(self, now: float) -> None:
        """The next time a reservation starts or ends (``tick`` waits for it)."""
        times = [t for r in self.resv.values() for t in (r.start_time, r.end_time) if t > now]
        self.__dict__["_resv_next_change"] = min(times, default=float("inf"))

    # ------------------------------------------------------------------ requests
    def create_reservation(self, fields: dict[str, str], who: Identity, now: float,
                           user_exists: Callable[[str], bool] = lambda _name: True) -> str:
        """scontrol create reservation: the new reservation's name."""
        with _logged("create", who, fields):
            return self._resv_create(fields, who, now, user_exists)

    def update_reservation(self, fields: dict[str, str], who: Identity, now: float,
                           user_exists: Callable[[str], bool] = lambda _name: True) -> None:
        with _logged("update", who, fields):
            self._resv_update(fields, who, now, user_exists)

    def delete_reservation(self, name: str, who: Identity, now: float) -> None:
        with _logged("delete", who, {"ReservationName": name}):
            self._resv_delete(name, who, now)

    def _resv_create(self, fields: dict[str, str], who: Identity, now: float,
                     user_exists: Callable[[str], bool]) -> str:
        self._resv_admin(who)
        known = _known(fields, "created")
        name = known.get("reservationname") or known.get("reservation") or self._resv_new_name(who)
        if name in self.resv:
            raise RequestError(rs.DUPLICATE, "DuplicateReservation")
        if "starttime" not in known:
            raise RequestError(rs.NO_START, "InvalidTime")
        if "endtime" not in known and "duration" not in known:
            raise RequestError("EndTime or Duration must be specified.  No reservation created.", "InvalidTime")
        if not known.get("users") and not known.get("accounts") and not known.get("groups"):
            raise RequestError(rs.NO_USERS, "InvalidReservation")
        if not known.get("nodes") and not known.get("nodecnt") and not known.get("nodecount"):
            raise RequestError("Nodes, NodeCnt, CoreCnt, TRES, Licenses or BurstBuffer must be specified.  "
                               "No reservation created.", "InvalidReservation")
        record = AdvanceReservation(name=name, start_time=0.0, end_time=0.0)
        self._resv_apply(record, known, who, now, user_exists, creating=True)
        self.resv[name] = record
        log.info("reservation %s created by %s: %s %s..%s", name, who.user, ",".join(record.nodes),
                 record.start_time, record.end_time)
        self._resv_changed(now)
        return name

    def _resv_update(self, fields: dict[str, str], who: Identity, now: float,
                     user_exists: Callable[[str], bool]) -> None:
        self._resv_admin(who)
        known = _known(fields, "update")
        name = known.get("reservationname") or known.get("reservation") or ""
        record = self.resv.get(name)
        if record is None:
            raise RequestError(rs.INVALID_RESV, "InvalidReservation")
        changed = msgspec.structs.replace(record, nodes=list(record.nodes), users=list(record.users),
                                      accounts=list(record.accounts), groups=list(record.groups),
                                      flags=list(record.flags))
        self._resv_apply(changed, known, who, now, user_exists, creating=False)
        self.resv[name] = changed
        log.info("reservation %s updated by %s", name, who.user)
        self._resv_changed(now)

    def _resv_delete(self, name: str, who: Identity, now: float) -> None:
        self._resv_admin(who)
        record = self.resv.get(name)
        if record is None:
            raise RequestError(rs.INVALID_RESV, "InvalidReservation")
        if any(j.spec.reservation == name and j.state in _RUNNING for j in self.jobs.values()):
            raise RequestError("Reservation request busy", "ReservationBusy")
        del self.resv[name]
        log.info("reservation %s deleted by %s", name, who.user)
        self._resv_changed(now)

    def reservation_records(self, name: str | None, now: float) -> list[dict[str, Any]]:
        """What scontrol show reservation and sinfo -T print, in start-time order."""
        records = sorted(self.resv.values(), key=lambda r: (r.start_time, r.name))
        if name:
            records = [r for r in records if r.name == name]
        cpus = {n: node.cpus for n, node in self.nodes.items()}
        return [dict(msgspec.structs.asdict(r), state=r.state(now), cores=sum(cpus.get(n, 0) for n in r.nodes))
                for r in records]

    def resv_state(self, node: model.Node, now: float) -> str:
        """The node's state word with the flags an ACTIVE reservation adds, before a
        not-responding node's "*": IDLE+MAINTENANCE+RESERVED, IDLE+RESERVED (the real 22.05's,
        tests/tools/reference/reservations/session6_node_states.txt)."""
        state = node.state
        if not self.resv:
            return state
        flags: set[str] = set()
        for record in self.resv.values():
            if node.name in record.nodes and record.state(now) == rs.ACTIVE:
                flags.add("RESERVED")
                if "MAINT" in record.flags:
                    flags.add("MAINTENANCE")
        if not flags:
            return state
        star = "*" if state.endswith("*") else ""
        return state.rstrip("*") + "".join(f"+{f}" for f in sorted(flags)) + star

    def check_job_reservation(self, spec: model.JobSpec, who: Identity) -> None:
        """At submission: --reservation names a reservation the job may use (Slurm's words)."""
        if not spec.reservation:
            return
        record = self.resv.get(spec.reservation)
        if record is None:
            raise RequestError(rs.INVALID_RESV, "InvalidReservation")
        account = spec.account or self.accounts.default_account(who.user)
        if not record.admits(who.user, account, who.groups):
            raise RequestError(ACCESS_DENIED_RESV, "AccessDenied")

    def reservation_change(self, job: model.Job, name: str | None, who: Identity) -> str | None:
        """scontrol update job Reservation=NAME (``""``: none): checked, not yet applied; the
        reservation the job is to have (None: none), or it raises with 22.05's words.
        22.05 takes it for a running job too (the job stays where it runs), not for a
        finished one; the job's user (root and SlurmUser: any) must be admitted by NAME."""
        if job.state not in model.ACTIVE_STATES:
            raise RequestError("Job has already finished", "AlreadyDone")
        if not name:
            return None
        record = self.resv.get(name)
        if record is None:
            raise RequestError(rs.INVALID_RESV, "InvalidReservation")
        account = job.spec.account or self.accounts.default_account(job.spec.user)
        groups = who.groups if who.uid == job.spec.user_id else frozenset()
        if job.spec.user_id != 0 and job.spec.user != self.settings.slurm_user and \
                not record.admits(job.spec.user, account, groups):
            raise RequestError(ACCESS_DENIED_RESV, "AccessDenied")
        return name

    # ------------------------------------------------------------------ scheduling
    def resv_demand(self, job: model.Job, demand: Any, now: float) -> Any:
        """The job's demand with the nodes reservations keep from it taken out."""
        if self.immediate_behind(job):  # salloc/srun -I behind a job of higher priority: no node (core_immediate.py)
            return dataclasses.replace(demand, exc_nodes=list(self.nodes))
        table = self.resv
        if not table and not job.spec.reservation:
            return demand  # (no reservations: nothing to do for the usual job)
        held = self.__dict__["_resv_held"]
        held.pop(job.job_id, None)
        own = self.resv.get(job.spec.reservation) if job.spec.reservation else None
        end = None if job.time_limit is None else now + job.time_limit * 60.0
        excluded: set[str] = set()
        for record in self.resv.values():
            if record is not own and record.overlaps(now, end):
                excluded.update(record.nodes)
        if job.spec.reservation:
            if own is None:
                held[job.job_id] = REASON_RESV_DELETED
                excluded = set(self.nodes)
            elif own.state(now) != rs.ACTIVE:
                held[job.job_id] = REASON_RESERVATION
                excluded = set(self.nodes)
            elif "FLEX" not in own.flags:
                inside = set(own.nodes)
                excluded.update(n for n in self.nodes if n not in inside)
        if not excluded:
            return demand
        if job.job_id not in held:
            held[job.job_id] = REASON_RESV_NODES
        # The same exclusions recur over a queue: listed once per pass (O(nodes) each).
        key = (frozenset(excluded), tuple(demand.exc_nodes))
        cache = self.__dict__.setdefault("_resv_lists", {})
        names = cache.get(key)
        if names is None:
            names = cache[key] = [n for n in self.nodes if n in excluded or n in demand.exc_nodes]
        return dataclasses.replace(demand, exc_nodes=names)

    def resv_reasons(self, candidates: list[tuple[model.Job, Any]], now: float) -> None:
        """After a pass: the pending jobs that reservations held back get Slurm's reason."""
        if not self.resv and not self.__dict__.get("_resv_held"):
            return
        held = self.__dict__["_resv_held"]
        for job, _ in candidates:
            reason = held.get(job.job_id)
            # PartitionConfig: not even the idle nodes left to it would hold it (a job that
            # only waits for busy nodes keeps Resources); its own reservation not usable: any.
            if reason is not None and job.state == model.PENDING and job.reason in _HELD_REASONS and (
                    job.reason == "PartitionConfig" or reason != REASON_RESV_NODES):
                job.reason = reason
        held.clear()  # (the next pass works them out again)
        self.__dict__.pop("_resv_lists", None)

    def resv_tick(self, now: float) -> None:
        """Time passing: reservations start and end (DAILY/WEEKLY roll on)."""
        if now < self.__dict__.get("_resv_next_change", float("inf")):
            return
        for record in self.resv.values():
            if record.roll(now):
                log.info("reservation %s repeats: next %s..%s", record.name, record.start_time, record.end_time)
        for name in [n for n, r in self.resv.items() if r.end_time <= now]:
            log.info("reservation %s ended", name)
            self._resv_release_jobs(self.resv.pop(name))
        self._resv_changed(now)

    def _resv_release_jobs(self, record: AdvanceReservation) -> None:
        """A reservation is over: its pending jobs lose it and, as Slurm's documentation says,
        are held, unless it had NO_HOLD_JOBS_AFTER_END (then they may run outside it)."""
        for job in self.jobs.values():
            if job.state == model.PENDING and job.spec.reservation == record.name:
                job.spec.reservation = None
                if "NO_HOLD_JOBS_AFTER_END" not in record.flags:
                    job.held_by, job.priority = "admin", 0
                    job.reason = "JobHeldAdmin"
                log.info("job %s: reservation %s ended (%s)", job.job_id, record.name,
                         "held" if job.held_by == "admin" else "it may run outside it")
                self._save(job)

    # ------------------------------------------------------------------ durability
    def take_reservations(self) -> str | None:
        """The reservations as JSON if they changed since the last call, else None."""
        if not self.__dict__.get("_resv_dirty"):
            return None
        self.__dict__["_resv_dirty"] = False
        return _encode(list(self.resv.values())).decode()

    def restore_reservations(self, text: str | None, now: float) -> None:
        """Put back what ``take_reservations`` gave (unreadable: logged, none restored)."""
        if not text:
            return
        try:
            records = _decode(text)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            log.error("saved reservations unreadable, not restored: %s", exc)
            return
        self.resv.update((r.name, r) for r in records)
        # The next tick looks at them all: one may have ended (or repeated) while no controller ran.
        self.__dict__["_resv_next_change"] = now
        self.need_schedule = True

    # ------------------------------------------------------------------ helpers
    def _resv_admin(self, who: Identity) -> None:
        """Operators and Administrators (and root, SlurmUser) only, as Slurm's controller."""
        if not authz.is_operator(who, self.accounts):
            raise authz.denied(authz.USER_ID_MISSING)  # (Slurm's words for it here)

    def _resv_new_name(self, who: Identity) -> str:
        """No ReservationName: Slurm names it after its creator, user_N."""
        number = 1
        while f"{who.user}_{number}" in self.resv:
            number += 1
        return f"{who.user}_{number}"

    def _resv_apply(self, record: AdvanceReservation, known: dict[str, str], who: Identity, now: float,
                    user_exists: Callable[[str], bool], creating: bool) -> None:
        """Put the keys into ``record`` and check the result (Slurm's errors, nothing half done:
        ``record`` is a copy until it is stored)."""
        if len(record.name) > rs.NAME_LIMIT:
            raise RequestError(authz.TOO_LONG, "PathnameTooLong")
        duration = record.end_time - record.start_time
        if "starttime" in known:
            record.start_time = rs.parse_time(known["starttime"], now)
            if record.start_time < now - 60 and creating:
                raise RequestError(rs.BAD_TIME, "InvalidTime")
            record.end_time = record.start_time + duration
        if "endtime" in known:
            record.end_time = rs.parse_time(known["endtime"], now)
        elif "duration" in known:
            record.end_time = record.start_time + rs.parse_duration(known["duration"])
        if record.end_time <= record.start_time:
            raise RequestError(rs.BAD_TIME, "InvalidTime")
        if "flags" in known:
            record.flags = rs.parse_flags(known["flags"], record.flags)
        if "users" in known:
            record.users = rs.split_list(known["users"])
            if not all(user_exists(u) for u in record.users):
                raise RequestError(rs.BAD_USER, "InvalidUserId")
            book = self.accounts.users_by_name
            if book and any(u not in book for u in record.users):  # a user without an association
                raise RequestError(rs.BAD_ACCOUNT, "InvalidAccount")
        if "accounts" in known:
            record.accounts = rs.split_list(known["accounts"])
            if any(a not in self.accounts.accounts_by_name for a in record.accounts):
                raise RequestError(rs.BAD_ACCOUNT, "InvalidAccount")
        if "groups" in known:
            record.groups = rs.split_list(known["groups"])
        if not creating and not record.users and not record.accounts and not record.groups:
            raise RequestError(rs.NO_USERS, "InvalidReservation")
        part_key = known.get("partitionname", known.get("partition"))
        if part_key is not None:
            if part_key and part_key not in self.partitions:
                raise RequestError(rs.BAD_PARTITION, "InvalidPartition")
            record.partition = part_key or None
        if "features" in known:
            record.features = known["features"] or None
        if known.get("nodes"):
            record.nodes = self._resv_named_nodes(known["nodes"])
            if "SPEC_NODES" not in record.flags:
                record.flags.append("SPEC_NODES")
        elif known.get("nodecnt") or known.get("nodecount"):
            if record.partition is None:  # as Slurm: counted nodes come from one partition
                record.partition = getattr(self, "default_partition", None)
            record.nodes = self._resv_pick_nodes(record, known.get("nodecnt") or known.get("nodecount") or "")
            if "SPEC_NODES" in record.flags:
                record.flags.remove("SPEC_NODES")
        self._resv_check_busy(record)

    def _resv_named_nodes(self, value: str) -> list[str]:
        from plurm.grammar.hostlist import count, expand

        if value.upper() == "ALL":
            return list(self.nodes)
        try:
            if count(value) > 4 * len(self.nodes):  # (more names than there are: never expanded)
                raise ValueError(value)
            names = set(expand(value))
        except ValueError:
            raise RequestError(rs.BAD_NODE, "InvalidNodeName") from None
        if not names or any(n not in self.nodes for n in names):
            raise RequestError(rs.BAD_NODE, "InvalidNodeName")
        return [n for n in self.nodes if n in names]

    def _resv_pick_nodes(self, record: AdvanceReservation, value: str) -> list[str]:
        """NodeCnt=N: the first N usable nodes (of its partition, if it names one) that no other
        reservation holds over its time and (without IGNORE_JOBS/MAINT) no job runs on past its start."""
        try:
            count = int(value.strip())
        except ValueError:
            raise RequestError(rs.NODE_CONFIG, "ConfigUnavailable") from None
        if count < 1:
            raise RequestError(rs.NODE_CONFIG, "ConfigUnavailable")
        pool = list(self.partitions[record.partition].nodes) if record.partition else list(self.nodes)
        taken = self._resv_taken(record)
        # Counted nodes avoid every other reservation of the same time (OVERLAP, MAINT or not).
        taken.update(n for other in self.resv.values() if other.name != record.name
                     and other.overlaps(record.start_time, record.end_time) for n in other.nodes)
        free = [n for n in self.nodes if n in pool and n not in taken
                and not (self.nodes[n].down or self.nodes[n].drain)]
        if len(free) < count:  # (the real 22.05's words, even for more nodes than there are)
            raise RequestError(rs.BUSY, "NodesBusy")
        return free[:count]

    def _resv_taken(self, record: AdvanceReservation, jobs: bool = True) -> set[str]:
        """Nodes this reservation may not have: other reservations' over the same time (unless
        one of the two is OVERLAP or MAINT), and (``jobs``, without IGNORE_JOBS or MAINT) nodes
        with jobs running into its start."""
        taken: set[str] = set()
        for other in self.resv.values():
            if other.name == record.name or not other.overlaps(record.start_time, record.end_time):
                continue
            if not {"OVERLAP", "MAINT"} & (set(record.flags) | set(other.flags)):
                taken.update(other.nodes)
        if jobs and "IGNORE_JOBS" not in record.flags and "MAINT" not in record.flags:
            for job in self.jobs.values():
                if job.state in _RUNNING and job.spec.reservation != record.name and (
                        job.end_time is None or job.end_time > record.start_time):
                    taken.update(job.nodes)
        return taken

    def _resv_check_busy(self, record: AdvanceReservation) -> None:
        if set(record.nodes) & self._resv_taken(record, jobs=False):
            raise RequestError(rs.OVERLAPS, "ReservationOverlap")
        if set(record.nodes) & self._resv_taken(record):
            raise RequestError(rs.BUSY, "NodesBusy")
