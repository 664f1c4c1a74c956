"""--signal, GraceTime and KillWait in the pure core (core_signals.py), with an explicit clock.

Each test drives ``ClusterCore`` as the controller does (submit, schedule, tick, the node's
end report) and reads the messages for the node daemons: which signal, to which scope
("steps": the srun tasks; "batch": the batch shell only), when, and how many times.
"""

from __future__ import annotations

import msgspec
import pytest

from plurm.corescheduler import effects as fx
from plurm.corescheduler.configure import settings_from_conf
from plurm.corescheduler.core import ClusterCore, CoreSettings
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.preempt import PartitionPrioPreemption
from plurm.corescheduler.service import Service
from plurm.wire import model, protocol
from plurm.wire.model import EarlierRun, Job, JobSpec, Node, Partition, WarnSignal

ROOT = Identity(0, 0, "root", operator=True)
ALICE = Identity(1001, 1001, "alice", frozenset({"alice"}))
T0 = 1_000_000.0
USR1, SIGCONT, SIGTERM = 10, 18, 15


def _core(grace: int = 0, **settings) -> tuple[ClusterCore, Service]:
    nodes = {f"n{i}": Node(name=f"n{i}", cpus=2, real_memory=4000, responding=True, boot_time=1.0)
             for i in (1, 2)}
    partitions = {"low": Partition(name="low", nodes=list(nodes), default=True, priority_tier=1,
                                   grace_time=grace),
                  "high": Partition(name="high", nodes=list(nodes), priority_tier=2)}
    settings.setdefault("kill_wait", 7.0)
    core = ClusterCore(nodes, partitions, CoreSettings(cluster_name="t", slurmd_timeout=1e9, cred_expire=5,
                                                       preempt_mode="REQUEUE", **settings),
                       preempt_policy=PartitionPrioPreemption(), now=T0)
    return core, Service(core)


def _run(core: ClusterCore, service: Service, now: float = T0, **spec) -> Job:
    spec.setdefault("script", "#!/bin/sh\nsleep 600\n")
    spec.setdefault("time_limit", 10)
    job_id = service.submit(protocol.SubmitJob(spec=JobSpec(**spec)), ALICE, now)["job_id"]
    core.schedule(now)
    job = core.jobs[job_id]
    assert job.state == model.RUNNING
    return job


def _signals(out: list) -> list[tuple[str, int, str]]:
    return [(o.node, o.body["signal"], o.body["scope"]) for o in out if o.msg_type == "signal_job"]


def _terminations(out: list) -> list[tuple[str, float]]:
    return [(o.node, o.body["kill_wait"]) for o in out if o.msg_type == "terminate_job"]


def test_the_steps_get_the_signal_secs_before_the_limit_once() -> None:
    core, service = _core()
    job = _run(core, service, nodes_min=2, exclusive=True, signal=WarnSignal(number=USR1, seconds=5))
    end = T0 + 600
    assert job.end_time == end
    assert core.tick(end - 5.01) == []
    core.take_effects()
    out = core.tick(end - 5)
    # Every step on every node, never the batch shell (sbatch(1): without B:).
    assert _signals(out) == [("n1", USR1, "steps"), ("n2", USR1, "steps")]
    assert job.warned_run == 0 and fx.SaveJob(job) in core.take_effects()  # durable
    assert core.tick(end - 4) == [] and core.tick(end - 1) == []  # once per run
    out = core.tick(end)
    assert _signals(out) == [] and _terminations(out) == [("n1", 7.0), ("n2", 7.0)]  # KillWait
    assert job.state == model.TIMEOUT and job.completing


def test_b_signals_the_batch_shell_only_and_the_default_time_is_60_s() -> None:
    core, service = _core()
    job = _run(core, service, nodes_min=2, exclusive=True, signal=WarnSignal(number=USR1, batch=True))
    assert job.spec.signal is not None and job.spec.signal.seconds == 60
    assert core.tick(T0 + 539.9) == []
    assert _signals(core.tick(T0 + 540)) == [("n1", USR1, "batch")]  # the batch host only
    assert core.tick(T0 + 541) == []


def test_an_allocation_without_a_shell_gets_no_b_signal_and_r_changes_nothing() -> None:
    core, service = _core()
    salloc = _run(core, service, batch=False, script=None, signal=WarnSignal(number=USR1, seconds=30, batch=True))
    srun = _run(core, service, batch=False, script=None, signal=WarnSignal(number=12, seconds=30, reservation=True))
    out = core.tick(T0 + 570)
    assert _signals(out) == [(srun.nodes[0], 12, "steps")]  # R: (no reservations): as without it
    assert salloc.warned_run == 0  # decided, and nothing to send


def test_a_long_warning_time_signals_at_once_and_a_job_without_one_never() -> None:
    core, service = _core()
    warned = _run(core, service, time_limit=1, signal=WarnSignal(number=USR1, seconds=120))
    plain = _run(core, service, time_limit=1)
    assert _signals(core.tick(T0 + 0.5)) == [(warned.nodes[0], USR1, "steps")]
    assert [o.body["job_id"] for o in core.tick(T0 + 60)] == [warned.job_id, plain.job_id]  # terminations only


def test_a_suspended_job_is_warned_later_by_the_time_it_was_suspended() -> None:
    core, service = _core()
    job = _run(core, service, signal=WarnSignal(number=USR1, seconds=10))
    core.suspend_job(job, T0 + 100)
    assert core.tick(T0 + 590) == []  # suspended: not running, not warned
    core.resume_job(job, T0 + 200)
    assert job.end_time == T0 + 700
    assert core.tick(T0 + 689) == []
    assert _signals(core.tick(T0 + 690)) == [(job.nodes[0], USR1, "steps")]


def test_a_requeued_job_is_warned_again_in_its_next_run() -> None:
    core, service = _core()
    job = _run(core, service, time_limit=1, signal=WarnSignal(number=USR1, seconds=50, batch=True))
    assert _signals(core.tick(T0 + 10)) == [("n1", USR1, "batch")]
    # The checkpoint pattern: the shell traps it and requeues itself.
    out = core.requeue_job(job, ALICE, T0 + 11)
    assert _terminations(out) == [("n1", 7.0)] and job.state == model.PENDING
    core.job_ended(job.job_id, 0, SIGTERM, T0 + 12, T0 + 12)
    assert job.restarts == 1 and job.spec.begin_time == T0 + 11 + 6  # cred_expire=5, + 1
    # The run that ended, for sacct -D (a REQUEUED record before the latest run's).
    assert job.earlier_runs == [EarlierRun(submit_time=T0, start_time=T0, end_time=T0 + 12, nodes=["n1"],
                                           cpus=[1])]
    core.schedule(T0 + 17)
    assert job.state == model.RUNNING and job.end_time == T0 + 77
    assert core.tick(T0 + 26.9) == []
    assert _signals(core.tick(T0 + 27)) == [("n1", USR1, "batch")]
    assert job.warned_run == 1


def test_a_restarted_controller_does_not_warn_a_run_twice() -> None:
    core, service = _core()
    job = _run(core, service, signal=WarnSignal(number=USR1, seconds=30))
    assert _signals(core.tick(T0 + 570))
    saved = [e.job for e in core.take_effects() if isinstance(e, fx.SaveJob)][-1]
    # What the store keeps (JSON) and loads back into a new core.
    blob = msgspec.json.encode(saved)
    again = msgspec.json.decode(blob, type=Job)
    assert again.spec.signal == WarnSignal(number=USR1, seconds=30) and again.warned_run == 0
    nodes = {n: Node(name=n, cpus=2, real_memory=4000, responding=True, boot_time=1.0) for n in ("n1", "n2")}
    core2 = ClusterCore(nodes, {"low": Partition(name="low", nodes=list(nodes), default=True)},
                        CoreSettings(slurmd_timeout=1e9), jobs=[again], now=T0 + 571)
    assert core2.tick(T0 + 575) == []


def test_a_malformed_signal_is_a_schema_error() -> None:
    for bad in ({"number": "USR1"}, {"seconds": 5}, {"number": 10, "batch": "yes"}, "USR1", {"number": 0},
                {"number": -9}, {"number": 0x10000}, {"number": 10, "seconds": -1}, {"number": 10, "seconds": 1e9}):
        raw = msgspec.json.encode({"spec": {"script": "#!/bin/sh\n", "signal": bad}})
        with pytest.raises(protocol.SchemaError):
            protocol.decode_body("submit_job", raw)


# ---------------------------------------------------------------------- preemption: GraceTime
def test_grace_time_warns_the_tasks_and_ends_the_job_when_it_is_over() -> None:
    core, service = _core(grace=20)
    victims = [_run(core, service, exclusive=True) for _ in range(2)]
    high = service.submit(protocol.SubmitJob(spec=JobSpec(script="#!/bin/sh\n", partition="high",
                                                          exclusive=True, time_limit=5)), ALICE, T0 + 1)["job_id"]
    out = core.schedule(T0 + 1)
    victim = next(v for v in victims if v.cancel_state)  # one is enough
    other = next(v for v in victims if v is not victim)
    # Its tasks get SIGCONT and SIGTERM at once; the batch shell nothing yet; no termination.
    assert _signals(out) == [(victim.nodes[0], SIGCONT, "steps"), (victim.nodes[0], SIGTERM, "steps")]
    assert _terminations(out) == []
    assert victim.state == model.RUNNING and victim.end_time == T0 + 21 and not other.cancel_state
    # While it runs on, the waiting job preempts nobody else.
    for t in (T0 + 2, T0 + 10, T0 + 20.9):
        assert core.tick(t) == [] and core.schedule(t) == []
    assert core.jobs[high].state == model.PENDING
    out = core.tick(T0 + 21)
    assert _terminations(out) == [(victim.nodes[0], 7.0)]  # then SIGTERM, SIGKILL after KillWait
    assert core.tick(T0 + 22) == []
    core.job_ended(victim.job_id, 0, SIGTERM, T0 + 23, T0 + 23)
    assert victim.state == model.PENDING and victim.restarts == 1  # PreemptMode=REQUEUE
    core.schedule(T0 + 23)
    assert core.jobs[high].state == model.RUNNING  # on the node the victim gave back


def test_grace_time_with_cancel_mode_records_preempted_even_if_it_exits_by_itself() -> None:
    core, service = _core(grace=30, preempt_send_user_signal=True)
    core.partitions["low"].preempt_mode = "CANCEL"
    victim = _run(core, service, nodes_min=2, exclusive=True, signal=WarnSignal(number=USR1, seconds=5, batch=True))
    service.submit(protocol.SubmitJob(spec=JobSpec(script="#!/bin/sh\n", partition="high", exclusive=True)),
                   ALICE, T0 + 1)
    out = core.schedule(T0 + 1)
    # PreemptParameters=send_user_signal: its own signal (B: the shell), not SIGTERM.
    assert _signals(out) == [("n1", USR1, "batch")] and victim.warned_run == 0
    assert core.tick(T0 + 26) == []  # not a second time before the (new) end
    core.job_ended(victim.job_id, 0, 0, T0 + 27, T0 + 27)  # it checkpointed and exited
    assert victim.state == model.PREEMPTED and not victim.completing


def test_without_grace_time_the_victim_ends_at_once_with_kill_wait() -> None:
    core, service = _core(grace=0)
    victim = _run(core, service, nodes_min=2, exclusive=True, signal=WarnSignal(number=USR1, seconds=5))
    service.submit(protocol.SubmitJob(spec=JobSpec(script="#!/bin/sh\n", partition="high", exclusive=True)),
                   ALICE, T0 + 1)
    out = core.schedule(T0 + 1)
    assert _signals(out) == [] and _terminations(out) == [("n1", 7.0), ("n2", 7.0)]
    assert victim.completing and victim.cancel_state == "REQUEUE"
    # Its time limit passing while it ends changes nothing (it stays a requeue).
    assert core.tick(T0 + 700) == [] and victim.cancel_state == "REQUEUE"


def test_cancel_and_the_time_limit_terminate_with_kill_wait() -> None:
    core, service = _core(kill_wait=3.0)
    job = _run(core, service)
    assert _terminations(core.cancel(job, ALICE, T0 + 1)) == [(job.nodes[0], 3.0)]
    job = _run(core, service, now=T0 + 2, time_limit=1)
    assert _terminations(core.tick(T0 + 62)) == [(job.nodes[0], 3.0)]


def test_preempt_parameters_are_read_from_slurm_conf() -> None:
    class Conf:
        cluster_name = "t"

        def __init__(self, options: dict[str, str]) -> None:
            self.options = options

        def get(self, key: str) -> str | None:
            return self.options.get(key)

    assert settings_from_conf(Conf({"PreemptParameters": "send_user_signal"})).preempt_send_user_signal
    assert not settings_from_conf(Conf({})).preempt_send_user_signal
