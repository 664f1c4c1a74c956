"""plurmd's jobs and steps as processes: adopting what an earlier plurmd left, reaping ends.

A mixin of ``NodeDaemon`` (nodeagent/daemon.py): ``_adopt`` takes over, at start, what the
plurmd before this one left running, ended or unreported in the spool (a plurmd killed with
-9 or restarted by ``scontrol reboot`` / ``--reboot`` leaves its jobs running); ``reap``, on
every turn of the loop, finds the batch scripts and steps that ended (their supervisors'
records), runs the Epilog and reports each end until a controller acknowledges it.
"""

from __future__ import annotations

import logging
import signal
import time
from typing import TYPE_CHECKING, Any

from plurm.nodeagent import jobstate, launch
from plurm.nodeagent.tracking import RunningJob, RunningStep, adopt

log = logging.getLogger("plurmd")


class ChildrenOfTheNode:
    if TYPE_CHECKING:  # provided by NodeDaemon
        name: str
        conf_path: str
        spool: str
        jobs: dict[tuple[int, int], RunningJob]
        steps: dict[tuple[int, int], RunningStep]
        step_owners: dict[tuple[int, int], int]
        unacked: dict[tuple[int, int], dict[str, Any]]
        exiting: list[launch.Child]
        opening: dict[tuple[int, int], launch.Opening]
        confine: Any
        sampler: Any

        def report_end(self, job_id: int, restarts: int, exit_code: int, exit_signal: int,
                       launch_failed: bool = False, **kw: Any) -> None: ...
        def _job_uid(self, job_id: int) -> int | None: ...

    def _adopt(self) -> None:
        """What the plurmd before this one left running, ended or unreported (the spool)."""
        from plurm.nodeagent.prolog import NodeScripts

        found = adopt(self.spool)
        scripts = NodeScripts.of(self)
        for path, record in found.ended:
            if not record.epilog_done:  # it was killed between the end and the Epilog
                scripts.run_epilog(record.job_id, self.name, self.conf_path)
                record.epilog_done = True
                record.save(path)
            assert record.end is not None
            self.unacked[(record.job_id, record.restarts)] = record.end
        for path, record in found.unstarted:
            # Killed while launching it, before the supervisor started the script.
            log.error("job %s (run %s): its launch was interrupted; reporting it failed", record.job_id,
                      record.restarts)
            scripts.run_epilog(record.job_id, self.name, self.conf_path)
            self.report_end(record.job_id, record.restarts, 1, 0, launch_failed=True)
        for job in found.jobs:
            self.jobs[job.key] = job
        for step in found.steps:
            key = (step.record.job_id, step.record.step_id)
            self.steps[key] = step
            self.step_owners[key] = step.record.uid
        # Cgroups this plurmd made for jobs it no longer has (they ended while none watched).
        self.confine.sweep({(job.uid, job.job_id) for job in self.jobs.values()}
                           | {(step.record.uid, step.record.job_id) for step in self.steps.values()})

    @staticmethod
    def _status(job: RunningJob, now: float) -> tuple[int, float] | None:
        """The run's end as its supervisor recorded it; an unreadable record is a kill."""
        try:
            return jobstate.read_status(job.run_dir)
        except jobstate.StateError as exc:
            log.error("job %s: %s; the job is reported killed", job.job_id, exc)
            return -signal.SIGKILL, now

    def reap(self) -> None:
        from plurm.nodeagent.prolog import NodeScripts

        now = time.time()
        for key, opening in list(self.opening.items()):
            if opening.poll() and not opening.failure:
                del self.opening[key]  # the files are open: the job runs
        for key, job in list(self.jobs.items()):
            status = self._status(job, now)
            if status is None and job.supervised():
                if job.kill_at is not None and now >= job.kill_at:
                    jobstate.kill_group(job.pgid, signal.SIGKILL)
                    job.kill_at = None
                    job.save()
                continue
            if status is None:
                status = self._status(job, now)  # written just before it exited?
            if status is None:
                # The supervisor died (killed with -9) without saying: the script's fate is unknown.
                log.error("job %s: its supervisor vanished; the job is reported killed", job.job_id)
                jobstate.kill_group(job.pgid, signal.SIGKILL)
                status = (-signal.SIGKILL, now)
            del self.jobs[key]
            if job.child is not None and job.child.poll() is None:
                self.exiting.append(job.child)  # it writes the status, then exits: reaped soon
            code, end_time = status
            exit_code, exit_signal = (0, -code) if code < 0 else (code, 0)
            oom, usage = self.sampler.batch_end(job, newer=any(o.job_id == job.job_id for o in self.jobs.values()))
            opening = self.opening.pop(key, None)
            if opening is not None:
                opening.poll()  # (what the shell said came before its end)
                opening.close()
            if opening is not None and opening.failure:
                log.error("job %s failed to launch: %s", job.job_id, opening.failure)
                NodeScripts.of(self).run_epilog(job.job_id, self.name, self.conf_path)
                self.report_end(job.job_id, job.restarts, *launch.OPEN_FAILED_EXIT, launch_failed=True,
                                end_time=end_time)
                continue
            log.info("job %s ended: exit %s signal %s", job.job_id, exit_code, exit_signal)
            record = job.record()
            record.end = {"job_id": job.job_id, "exit_code": exit_code, "exit_signal": exit_signal,
                          "end_time": end_time, "restarts": job.restarts, "node": self.name}
            record.save(job.run_dir)  # ended, Epilog due: a plurmd killed now runs it when back
            if not any(other.job_id == job.job_id for other in self.jobs.values()):  # (not for an old copy)
                NodeScripts.of(self).run_epilog(job.job_id, self.name, self.conf_path)
            self.report_end(job.job_id, job.restarts, exit_code, exit_signal, end_time=end_time, oom_kills=oom,
                            usage=usage)
        self.exiting = [child for child in self.exiting if child.poll() is None]
        for key, step in list(self.steps.items()):
            if not step.alive():
                del self.steps[key]
                step.record.forget(self.spool)
                if self.confine.confined and self._job_uid(key[0]) is None:  # its last process here
                    self.confine.release(step.record.uid, key[0])
            elif step.record.kill_at is not None and now >= step.record.kill_at:
                jobstate.kill_group(step.pid, signal.SIGKILL)
                step.record.kill_at = None
                step.record.save(self.spool)
        scripts = NodeScripts.of(self)
        for job_id in [j for j in scripts.due if not any(k[0] == j for k in self.steps)]:
            scripts.run_epilog(job_id, self.name, self.conf_path)
