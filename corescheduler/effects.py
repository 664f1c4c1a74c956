"""What the core asks its shell to do: messages for node daemons, and writes to make durable.

The core (corescheduler/core.py) never touches the state store.  Each change it
makes to a job, a step or the job counter is also appended as an effect; the
controller applies them to the store (StateStore.apply) and commits before any
reply leaves, the simulator drops them.  Objects are referenced, not copied: an
effect applied at the end of a loop turn writes the record as it is then, which
is what the store must hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from plurm.wire.model import Job, StepRecord


@dataclass(frozen=True, slots=True)
class SaveJob:
    job: Job


@dataclass(frozen=True, slots=True)
class DeleteJob:
    job_id: int


@dataclass(frozen=True, slots=True)
class SaveScript:
    """A submission's batch script and environment (kept out of the core's memory)."""

    job_id: int
    script: str | None
    environment: dict[str, str]


@dataclass(frozen=True, slots=True)
class CopyScript:
    """An array task split off its array record runs the array's script."""

    source: int
    job_id: int


@dataclass(frozen=True, slots=True)
class SaveAcctJob:
    job: Job


@dataclass(frozen=True, slots=True)
class SaveAcctStep:
    step: StepRecord


@dataclass(frozen=True, slots=True)
class SetNextJobId:
    next_job_id: int


Effect = SaveJob | DeleteJob | SaveScript | CopyScript | SaveAcctJob | SaveAcctStep | SetNextJobId


@dataclass(slots=True)
class Outgoing:
    """A message for one node daemon (launch_job, terminate_job, signal_job, ...)."""

    node: str
    msg_type: str
    body: dict[str, Any]
