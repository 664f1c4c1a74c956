"""The event journal (issue 16 item 4): job, step and node events, kept in a bounded ring.

Pure (no clock, no socket, no store): the controller's shell (journal_shell.py) hands it the
core's effects and the time, and sends what it returns.  Events are derived from what the core
already reports (corescheduler/effects.py: SaveJob, SaveAcctStep, DeleteJob) by comparing a
job's state with the state the journal saw last, so no core module learns of the journal.

An event is a flat dict, encoded once (``Event.raw``) whoever receives it:
``{"seq", "time", "event", ...}``; the names and fields are in docs/events.md.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from plurm.corescheduler import effects as fx
from plurm.wire import model

DEFAULT_SIZE = 100_000
# The state a job enters -> the event's name (PENDING and RUNNING depend on where it came from).
_FINAL_EVENT = {model.CANCELLED: "cancel"}
JOB_EVENTS = frozenset({"submit", "start", "suspend", "resume", "requeue", "complete", "cancel"})
STEP_EVENTS = frozenset({"step_start", "step_end"})
NODE_EVENTS = frozenset({"node_state"})
EVENT_NAMES = JOB_EVENTS | STEP_EVENTS | NODE_EVENTS
FINISHED = model.FINISHED_STATES


@dataclass(slots=True)
class Event:
    seq: int
    body: dict[str, Any]
    raw: bytes  # the JSON of body, encoded once for every subscriber


def job_event_name(previous: str | None, state: str) -> str | None:
    """The event a job's move from ``previous`` (None: unknown to the journal) to ``state`` is."""
    if previous == state:
        return None
    if state == model.PENDING:
        return "submit" if previous is None else "requeue"
    if state == model.RUNNING:
        return "resume" if previous == model.SUSPENDED else "start"
    if state == model.SUSPENDED:
        return "suspend"
    if state in FINISHED:
        return _FINAL_EVENT.get(state, "complete")
    return None


@dataclass(slots=True)
class Filter:
    """What a subscriber asked for; an empty set means "any".  A job or user filter selects
    job and step events only (a node belongs to no one job or user)."""

    job_ids: frozenset[int] = frozenset()
    users: frozenset[str] = frozenset()  # names or uids as text
    partitions: frozenset[str] = frozenset()
    events: frozenset[str] = frozenset()

    def matches(self, ev: dict[str, Any]) -> bool:
        if self.events and ev["event"] not in self.events:
            return False
        if ev["event"] in NODE_EVENTS:
            if self.job_ids or self.users:
                return False
            return not self.partitions or bool(self.partitions.intersection(ev.get("partitions", ())))
        if self.job_ids and ev.get("job_id") not in self.job_ids \
                and ev.get("array_job_id") not in self.job_ids:
            return False
        if self.users and ev.get("user") not in self.users and str(ev.get("user_id")) not in self.users:
            return False
        return not self.partitions or ev.get("partition") in self.partitions


@dataclass(slots=True)
class Viewer:
    """Who reads, as the controller verified them: PrivateData=jobs hides others' jobs and
    steps, PrivateData=nodes the nodes, from all but the privileged."""

    uid: int
    private_jobs: bool = False
    private_nodes: bool = False

    def may_see(self, ev: dict[str, Any]) -> bool:
        if ev["event"] in NODE_EVENTS:
            return not self.private_nodes
        return not self.private_jobs or ev.get("user_id") == self.uid


class Journal:
    """The last ``size`` events, in order; ``seq`` numbers them from 1 for this controller's run."""

    def __init__(self, encode: Any, size: int = DEFAULT_SIZE) -> None:
        self.encode = encode  # body -> JSON bytes (protocol.encode: the core imports no codec)
        self.ring: deque[Event] = deque(maxlen=max(1, size))
        self.seq = 0

    def append(self, body: dict[str, Any]) -> Event:
        self.seq += 1
        body["seq"] = self.seq
        event = Event(self.seq, body, self.encode(body))
        self.ring.append(event)
        return event

    def backlog(self, since: int, filt: Filter, viewer: Viewer, until: int | None = None) -> list[Event]:
        """The events after ``since`` (up to ``until``) that ``viewer`` may see and ``filt`` selects."""
        until = self.seq if until is None else until
        if not self.ring or since >= until:
            return []
        first = self.ring[0].seq
        start, stop = max(0, since + 1 - first), until + 1 - first
        return [e for i, e in enumerate(self.ring) if start <= i < stop and filt.matches(e.body)
                and viewer.may_see(e.body)]


@dataclass(slots=True)
class Deriver:
    """Turns the core's effects into event bodies by remembering each job's last state, the
    open steps and each node's state word (bounded by the core's own jobs, steps and nodes)."""

    jobs: dict[int, str] = field(default_factory=dict)
    open_steps: set[tuple[int, str]] = field(default_factory=set)
    nodes: dict[str, str] = field(default_factory=dict)

    def seed(self, core: Any) -> None:
        """What a (re)built core holds is not news: restored jobs make no submit events."""
        self.jobs = {job_id: job.state for job_id, job in core.jobs.items()}
        self.open_steps = set()
        self.nodes = {name: node.state for name, node in core.nodes.items()}

    def job_events(self, effects: Iterable[fx.Effect], core: Any, now: float) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for effect in effects:
            if isinstance(effect, fx.SaveJob):
                job = effect.job
                name = job_event_name(self.jobs.get(job.job_id), job.state)
                self.jobs[job.job_id] = job.state
                if name is not None:
                    out.append(job_body(name, job, now))
            elif isinstance(effect, fx.SaveAcctStep):
                body = self._step(effect.step, core, now)
                if body is not None:
                    out.append(body)
            elif isinstance(effect, fx.DeleteJob):
                self.jobs.pop(effect.job_id, None)
        return out

    def _step(self, step: model.StepRecord, core: Any, now: float) -> dict[str, Any] | None:
        key = (step.job_id, step.step_id)
        if step.end_time is None:
            if key in self.open_steps:
                return None
            self.open_steps.add(key)
            name = "step_start"
        else:
            self.open_steps.discard(key)
            name = "step_end"
        job = core.jobs.get(step.job_id)
        body: dict[str, Any] = {"time": now, "event": name, "job_id": step.job_id, "step_id": step.step_id,
                                "step_name": step.name, "nodes": list(step.nodes), "state": step.state}
        if job is not None:
            body.update(user=job.spec.user, user_id=job.spec.user_id, partition=job.partition)
        return body

    def node_events(self, core: Any, now: float) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for name, node in core.nodes.items():
            state = node.state
            previous = self.nodes.get(name)
            if previous != state:
                self.nodes[name] = state
                out.append({"time": now, "event": "node_state", "node": name, "state": state,
                            "previous": previous, "reason": node.reason, "partitions": list(node.partitions)})
        for name in [n for n in self.nodes if n not in core.nodes]:  # (deleted dynamic nodes)
            del self.nodes[name]
        return out


def job_body(name: str, job: model.Job, now: float) -> dict[str, Any]:
    body: dict[str, Any] = {"time": now, "event": name, "job_id": job.job_id, "job_name": job.spec.name,
                            "user": job.spec.user, "user_id": job.spec.user_id, "partition": job.partition,
                            "state": job.state, "reason": job.reason}
    if job.array_job_id is not None:
        body.update(array_job_id=job.array_job_id, array_task_id=job.array_task_id)
    if name in ("start", "resume", "suspend"):
        body["nodes"] = list(job.nodes)
    if name in ("complete", "cancel"):
        body.update(exit_code=job.exit_code, exit_signal=job.exit_signal, nodes=list(job.nodes))
    return body
