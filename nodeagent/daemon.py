"""plurmd: the node daemon.

It connects a DEALER (routing id ``node:NAME:RANDOM``: the controller learns it from
the daemon's authenticated messages) to every controller (SlurmctldHost lines: the
primary and its standbys; each message goes to all of them, the standbys ignore node
messages until they take over), registers the node, pings it, runs batch scripts the
controllers send, and reports their end until a controller acknowledges the report: a
controller that was down (even killed with -9) gets every report when it comes back,
and running jobs are never disturbed by its absence.

Nor by plurmd's own: each batch script runs under a supervisor process of its own
(nodeagent/supervisor.py) that records its end in the spool, and every step under its
plurmstepd; a plurmd killed with -9 or stopped for an upgrade leaves them running, and
the next one adopts them from the spool (daemon_children.py, jobstate.py, tracking.py): their
ends are reported with the exit status the script really had, terminate and signal
requests reach their process groups, and a KillWait deadline still runs out.  Node
reports name each job's run (its restart count), so that the controller can tell an
old copy of a requeued job from the current one.

It also binds a ROUTER on the node's Port for srun: each step's tasks run
under a plurmstepd process (nodeagent/stepd.py), like Slurm's slurmstepd,
so that a misbehaving step cannot take plurmd down.

Jobs are confined (cgroups, nodeagent/confinement.py) where slurm.conf and the host allow:
each job's processes are in its cgroup from their start, and the job's end kills all of
them; otherwise they run in process groups, unconfined.  Usage is sampled on the loop
(nodeagent/sampling.py), which also runs the freeze policy.
"""

from __future__ import annotations

import logging
import os
import platform
import signal
import socket
import time
from typing import Any

import psutil
import zmq

from plurm.common.ratelimit import RateLimitedLog
from plurm.wire import auth, authtype, envelope, protocol, stepcred
from plurm.wire.client import daemon_uids, key_path_for
from plurm.wire.hardening import bind_address, guard, guarded_router
from plurm.common import environment
from plurm.nodeagent import container, gpulocal, jobstate, launch, sampling, stepbind, stepusage
from plurm.nodeagent.confinement import Confinement, ConfinementError, acct_frequency
from plurm.nodeagent import batch_freq
from plurm.nodeagent.daemon_children import ChildrenOfTheNode
from plurm.nodeagent.devices import NodeDevices, UsageStats
from plurm.nodeagent.jobstate import RunRecord, StepRecord
from plurm.nodeagent.tracking import RunningJob, RunningStep, remove_run

log = logging.getLogger("plurmd")

# Pings to the controllers: every 2 s, or PLURM_PING_INTERVAL seconds (tests that wait for turns).
PING_INTERVAL_S = float(os.environ.get("PLURM_PING_INTERVAL", "2"))
# Accelerator health checks (probe subprocesses): every minute, or PLURM_ACCEL_HEALTH_INTERVAL seconds.
HEALTH_INTERVAL_S = float(os.environ.get("PLURM_ACCEL_HEALTH_INTERVAL", "60"))
# Accelerator usage of running jobs, for accounting: every 30 s, or PLURM_ACCEL_USAGE_INTERVAL.
USAGE_INTERVAL_S = float(os.environ.get("PLURM_ACCEL_USAGE_INTERVAL", "30"))
RESEND_INTERVAL_S = 2.0
VERSION = "22.05.8"


class NodeDaemon(ChildrenOfTheNode):
    """The node daemon (its adoption and reaping of the jobs it runs: daemon_children.py)."""

    def __init__(self, conf_file: str, node_name: str, dynamic_conf: str | None = None) -> None:
        from plurm.grammar.slurmconf import load_slurm_conf

        self.conf_path = os.path.abspath(conf_file)
        self.conf = load_slurm_conf(self.conf_path)
        self.dynamic_conf, self.dynamic_line = dynamic_conf, ""  # plurmd -Z (nodeagent/dynamic.py)
        if dynamic_conf is not None:
            from plurm.nodeagent.dynamic import add_to_conf

            self.dynamic_line = add_to_conf(self.conf, node_name, dynamic_conf)
        if node_name not in self.conf.nodes:
            raise SystemExit(f"plurmd: error: node {node_name} not found in {self.conf_path}")
        self.name = node_name
        self.node_conf = self.conf.nodes[node_name]
        self.auth = authtype.load(self.conf.get("AuthType"), key_path_for(self.conf_path), self.conf.get("AuthInfo"))
        # Who speaks for the controller (and may be answered as a daemon): root, SlurmUser, SlurmdUser, us.
        self.daemon_uids = daemon_uids([u for u in (self.conf.get("SlurmUser"), self.conf.get("SlurmdUser")) if u]
                                       + [str(os.getuid())])
        self.step_owners: dict[tuple[int, int], int] = {}  # (job, step) -> the uid its tasks run as
        self.log_limit = RateLimitedLog(log)
        self.spool = jobstate.node_spool(self.conf, self.conf_path, node_name)
        os.makedirs(self.spool, exist_ok=True)
        self.start_time = time.time()
        self.jobs: dict[tuple[int, int], RunningJob] = {}  # (job id, run) -> the batch script's run
        self.steps: dict[tuple[int, int], RunningStep] = {}  # (job id, step id) -> its plurmstepd
        self.unacked: dict[tuple[int, int], dict[str, Any]] = {}  # (job id, run) -> its end report
        self.exiting: list[launch.Child] = []  # supervisors done with their job, not yet reaped
        self.opening: dict[tuple[int, int], launch.Opening] = {}  # runs whose files are not known open
        self.replays = envelope.ReplayGuard()
        self.ctx = zmq.Context()
        routing_id = b"node:" + node_name.encode() + b":" + os.urandom(8).hex().encode()
        self.ctlds: list[zmq.Socket] = []
        for _host, addr in self.conf.slurmctld_endpoints:
            sock = self.ctx.socket(zmq.DEALER)
            sock.setsockopt(zmq.ROUTING_ID, routing_id)
            sock.setsockopt(zmq.LINGER, 0)
            sock.setsockopt(zmq.RECONNECT_IVL, 100)
            sock.setsockopt(zmq.RECONNECT_IVL_MAX, 1000)
            sock.connect(f"tcp://{addr}:{self.conf.slurmctld_port}")
            self.ctlds.append(sock)
        self.srv = guarded_router(self.ctx, self.conf)  # bounds on what a peer may cost (hardening.py)
        self.srv.setsockopt(zmq.LINGER, 0)
        port = self.node_conf.port or self.conf.slurmd_port
        self.peer_guard = guard(self.srv, port)
        self.srv.bind(f"tcp://{bind_address(self.node_conf.addr)}:{port}")
        # SIGCHLD wakes the poll loop so that job ends are reported at once.
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        signal.set_wakeup_fd(self._wake_w.fileno(), warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self.accel = NodeDevices(self.conf_path, node_name, self.node_conf.gres)
        self.accel.detect()
        self.usage: dict[int, UsageStats] = {}
        self.accel_work = sampling.AccelWork(self.accel, self.usage, HEALTH_INTERVAL_S, USAGE_INTERVAL_S)
        gpu_files = [d.device_file for d in self.accel.devices] or [
            f for e in self.accel.entries if e.name == "gpu" for f in e.files]
        try:
            self.confine = Confinement.load(self.conf, self.conf_path, node_name, gpu_files, self.spool)
        except ConfinementError as exc:  # a bad cgroup.conf (slurmd stops on it too)
            raise SystemExit(f"plurmd: error: {exc}") from exc
        self.sampler = sampling.Sampler(self.confine, acct_frequency(self.conf), sampling.load_policies(self.conf_path),
                                        self.send_ctld, node_name)
        self.running = True
        self._adopt()
        self.where = {
            "cluster": self.conf.cluster_name or "cluster",
            "conf_path": self.conf_path,
            "ctld_host": self.conf.slurmctld_host or "localhost",
            "ctld_port": self.conf.slurmctld_port,
        }

    # ------------------------------------------------------------------ messaging
    def send_ctld(self, msg_type: str, body: dict[str, Any]) -> None:
        """To every controller: the standbys drop node messages until they take over."""
        frames = [b""] + envelope.seal(self.auth, msg_type, body)
        for sock in self.ctlds:
            try:
                sock.send_multipart(frames, flags=zmq.NOBLOCK)
            except zmq.Again:
                log.debug("controller queue full; %s dropped (will be resent)", msg_type)

    def running_jobs(self) -> list[int]:
        return sorted({job_id for job_id, _ in self.jobs})

    def runs(self) -> dict[str, int]:
        """Job id -> the newest run of it here (an older one is being killed); the ids as
        strings, as JSON has them (NodePing.runs reads them back as integers)."""
        runs: dict[str, int] = {}
        for job_id, restarts in self.jobs:
            runs[str(job_id)] = max(restarts, runs.get(str(job_id), restarts))
        return runs

    def register(self) -> None:
        self.send_ctld("node_register", {
            "node": self.name,
            "cpus": self.node_conf.cpus,
            "real_memory": self.node_conf.real_memory,
            "boot_time": psutil.boot_time(),
            "slurmd_start_time": self.start_time,
            "running_jobs": self.running_jobs(),
            "runs": self.runs(),
            "os": f"{platform.system()} {platform.release()} {platform.version()}",
            "arch": platform.machine(),
            "version": VERSION,
            "cpu_load": os.getloadavg()[0],
            "free_mem": psutil.virtual_memory().available // (1024 * 1024),
            "devices": self.accel.describe(),
            "gres_problems": self.accel.problems,
            # per gpu unit, the CPUs local to it: the controller places enforce-binding jobs by it
            "gpu_cpus": gpulocal.unit_local_cpus(self.accel, self.confine, self.node_conf.threads_per_core),
            "dynamic_conf": self.dynamic_line,
        })
        for report in self.unacked.values():
            self.send_ctld("job_ended", report)

    def ping(self) -> None:
        body: dict[str, Any] = {
            "node": self.name,
            "running_jobs": self.running_jobs(),
            "runs": self.runs(),
            "cpu_load": os.getloadavg()[0],
            "free_mem": psutil.virtual_memory().available // (1024 * 1024),
            "unhealthy": dict(self.accel.unhealthy),
        }
        gpu_usage = self.accel_work.report.for_ping()  # (once per usage reading: nodeagent/gpu_report.py)
        if gpu_usage is not None:
            body["gpu_usage"] = gpu_usage
        self.send_ctld("node_ping", body)
        for report in self.unacked.values():
            self.send_ctld("job_ended", report)

    def _open(self, frames: list[bytes]) -> tuple[dict, Any] | None:
        """(header, typed body) of an authenticated message; the header's uid and gid are
        replaced by the ones its credential proves.  An authenticated message that is
        malformed gives (header or {}, the WireError to answer with); an unauthenticated
        one None (dropped unanswered)."""
        header: dict = {}
        try:
            header, raw, sender = envelope.open_envelope(self.auth, frames)
            self.replays.check(header)
            header["uid"], header["gid"] = sender.uid, sender.gid
            return header, protocol.decode_body(header["type"], raw)
        except envelope.AuthError as exc:
            self.log_limit.warning("unauthenticated", "dropped unauthenticated message: %s", exc)
        except envelope.WireError as exc:
            self.log_limit.warning("malformed", "bad message: %s", exc)
            return header, exc
        except protocol.SchemaError as exc:
            self.log_limit.warning("malformed", "bad message: %s", exc)
            known = header.get("type") in protocol.MESSAGE_TYPES
            return header, envelope.WireError(str(exc), "MalformedMessage" if known else "UnknownMessage")
        except Exception as exc:  # a bug in the checks: never a way to stop the daemon
            self.log_limit.warning("unauthenticated", "dropped unreadable message: %r", exc)
        return None

    # ------------------------------------------------------------------ controller messages
    def on_ctld(self, frames: list[bytes]) -> None:
        if frames and frames[0] == b"":
            frames = frames[1:]
        opened = self._open(frames)
        if opened is None or isinstance(opened[1], envelope.WireError):
            return  # (the controller waits for no answer)
        header, msg = opened
        kind = header["type"]
        if header["uid"] not in self.daemon_uids:
            self.log_limit.warning("refused", "refused %s on the controller's connection from uid %s", kind,
                                   header["uid"])
            return
        try:
            if kind == "launch_job":
                self.launch_batch(msg)
            elif kind == "terminate_job":
                self.terminate(msg.job_id, msg.kill_wait, msg.signal, msg.batch_host, msg.restarts)
            elif kind == "signal_job":
                self.signal_job(msg.job_id, msg.signal, msg.scope)
            elif kind == "job_ended_ack":
                self.acknowledged(msg.job_id, msg.restarts)
            elif kind == "please_register":
                self.register()
            elif kind in ("reboot_node", "reconfigure_node"):  # scontrol reboot / reconfigure
                from plurm.nodeagent import reboot

                reboot.handle(self, kind, msg)
            else:
                log.warning("unexpected message %s from controller", kind)
        except Exception:
            log.exception("error handling %s", kind)

    def launch_batch(self, msg: protocol.LaunchJob) -> None:
        restarts = int(msg.job.get("restarts") or 0)
        if (msg.job_id, restarts) in self.jobs or (msg.job_id, restarts) in self.unacked:
            return  # a resent launch
        for old in [job for job in self.jobs.values() if job.job_id == msg.job_id and job.restarts < restarts]:
            # A copy of an earlier run (the job was requeued while this node was away): never two.
            log.warning("job %s: killing its run %s for run %s", msg.job_id, old.restarts, restarts)
            jobstate.kill_group(old.pgid, signal.SIGKILL)
        from plurm.nodeagent.prolog import NodeScripts

        scripts = NodeScripts.of(self)
        started = time.time()
        run_dir = jobstate.run_dir(self.spool, msg.job_id, restarts)
        nodes = msg.job.get("nodes", [])
        index = nodes.index(self.name) if self.name in nodes else -1
        gpus = environment.allocated_gpus(msg.job, index) if index >= 0 else []
        used = {i for job in self.jobs.values() for i in job.cpus} | self.confine.held_cpus()
        counts, mems = msg.job.get("cpus") or [], msg.job.get("mem") or []
        count = int(counts[index]) if 0 <= index < len(counts) else 1
        cpus = self.confine.pick_cpus(count, used, stepbind.gpu_local_cpus(self.confine, self.accel, msg.job, gpus,
                                                                           count, used))
        err_path = launch.output_paths(msg, self.name)[1]
        RunRecord(msg.job_id, restarts, started, gpus, uid=msg.uid, cpus=cpus, err_path=err_path).save(run_dir)
        if scripts.run_prolog(msg.job, self.name, self.conf_path, self.where, self.accel.binding) is not None:
            scripts.run_epilog(msg.job_id, self.name, self.conf_path)
            self.report_end(msg.job_id, restarts, 1, 0, launch_failed=True, requeue_held=True)  # (node drained)
            return
        limits, procs = None, []
        try:
            if self.confine.confined:
                limits = self.confine.limits(cpus, int(mems[index]) if 0 <= index < len(mems) else 0, gpus)
                procs = self.confine.start_batch(msg.uid, msg.job_id, limits)
            batch = launch.start_batch(msg, self.name, self.spool, self.where, run_dir, binding=self.accel.binding,
                                       task_prolog=scripts.task_prolog, cgroup_procs=procs)
        except (launch.LaunchError, ConfinementError) as exc:
            log.error("job %s failed to launch: %s", msg.job_id, exc)
            if procs:
                self.confine.finish_batch(msg.uid, msg.job_id)
            scripts.run_epilog(msg.job_id, self.name, self.conf_path)
            self.report_end(msg.job_id, restarts, 1, 0, launch_failed=True)
            return
        job = RunningJob(msg.job_id, restarts, started, run_dir, batch.pgid, jobstate.ProcRef.of(batch.supervisor.pid),
                         batch.supervisor, gpus, uid=msg.uid, cpus=cpus, err_path=err_path,
                         mem_limit=getattr(limits, "ram_bytes", None))
        self.jobs[job.key] = job
        self.sampler.track(job, batch_freq.batch_every(msg.job))  # sbatch --acctg-freq=task=N (nodeagent/batch_freq.py)
        if batch.opening is not None and (not batch.opening.poll() or batch.opening.failure):
            # Its files are not open yet (a grace for its output directory), or could not be:
            # reap() reads the outcome on the loop's turns and reports a failure as a launch's.
            self.opening[job.key] = batch.opening
        log.info("job %s started (run %s), pid %s", msg.job_id, restarts, batch.pgid)

    def _groups(self, job_id: int, scope: str = "all", restarts: int = -1) -> list[int]:
        """The job's process groups: its batch script's ("batch": of the run ``restarts`` or
        an older one, any run for -1), its steps' ("steps"), or both."""
        groups: list[int] = []
        if scope in ("batch", "all"):
            groups.extend(job.pgid for job in self.jobs.values()
                          if job.job_id == job_id and (restarts < 0 or job.restarts <= restarts))
        if scope in ("steps", "all"):
            groups.extend(step.pid for (jid, _), step in self.steps.items() if jid == job_id)
        return groups

    def signal_job(self, job_id: int, signum: int, scope: str = "steps") -> None:
        """scancel -s: the steps' process groups; -b (and --signal=B:): the batch shell alone,
        not its children (scancel(1)); -f: the batch shell's whole group and the steps'.
        Confined, SIGSTOP (suspend) freezes the job's cgroup and SIGCONT thaws it first."""
        if signum == signal.SIGCONT:
            for job in self.jobs.values():
                if job.job_id == job_id:
                    self.sampler.resumed(job)
        if signum in (signal.SIGSTOP, signal.SIGCONT) and self._freeze(job_id, signum == signal.SIGSTOP):
            if signum == signal.SIGSTOP:
                return  # (SIGTSTP came before it, as a signal)
        if scope == "batch":
            for pid in self._groups(job_id, "batch"):  # the shell's pid leads its group
                try:
                    os.kill(pid, signum)
                except (ProcessLookupError, PermissionError):
                    pass
            return
        for pgid in self._groups(job_id, scope):
            jobstate.kill_group(pgid, signum)

    def _job_uid(self, job_id: int) -> int | None:
        """The owner of the job's processes here (its cgroup's path), None when it has none here."""
        for job in self.jobs.values():
            if job.job_id == job_id and job.uid >= 0:
                return job.uid
        for (jid, _), step in self.steps.items():
            if jid == job_id:
                return step.record.uid
        return None

    def _freeze(self, job_id: int, frozen: bool) -> bool:
        """Freeze or thaw the job's cgroup; False when it has none (signals do it then)."""
        uid = self._job_uid(job_id)
        if not self.confine.confined or uid is None:
            return False
        return self.confine.freeze(uid, job_id, frozen)

    def terminate(self, job_id: int, kill_wait: float, signum: int = signal.SIGTERM, batch_host: str = "",
                  restarts: int = -1) -> None:
        runs = [job for job in self.jobs.values() if job.job_id == job_id]
        targets = [job for job in runs if restarts < 0 or job.restarts <= restarts]
        if runs and not targets:
            log.info("job %s: terminate of run %s ignored: this node runs its run %s", job_id, restarts,
                     max(job.restarts for job in runs))
            return  # a newer run than the one the controller meant: never killed for an old one
        steps = [step for (jid, _), step in self.steps.items() if jid == job_id]
        if not runs:  # its steps' node (no batch script here): Epilog when they are gone
            from plurm.nodeagent.prolog import NodeScripts

            NodeScripts.of(self).mark_due(job_id)
        if not targets and not steps:
            if batch_host == self.name and not any(key[0] == job_id for key in self.unacked):
                # The controller waits for a job this node no longer has (a plurmd that
                # lost it: the spool was wiped): report it ended, killed.
                self.report_end(job_id, restarts, 0, signal.SIGKILL)
            return
        deadline = time.time() + kill_wait
        self._freeze(job_id, False)  # a frozen task cannot act on SIGTERM
        for pgid in [job.pgid for job in targets] + [step.pid for step in steps]:
            jobstate.kill_group(pgid, signal.SIGCONT)
            jobstate.kill_group(pgid, signum)
        for job in targets:
            job.kill_at = min(job.kill_at or deadline, deadline)
            job.save()  # a plurmd restarted meanwhile still kills it then
        for step in steps:
            step.record.kill_at = min(step.record.kill_at or deadline, deadline)
            step.record.save(self.spool)

    def report_end(self, job_id: int, restarts: int, exit_code: int, exit_signal: int, launch_failed: bool = False,
                   requeue_held: bool = False, end_time: float | None = None, oom_kills: int = 0,
                   usage: dict[str, float] | None = None) -> None:
        """Record the end in the spool, then tell the controllers (again until one acknowledges it)."""
        report: dict[str, Any] = {"node": self.name, "job_id": job_id, "exit_code": exit_code,
                                  "exit_signal": exit_signal, "end_time": end_time or time.time(),
                                  "restarts": restarts}
        if oom_kills:
            report["oom_kills"] = oom_kills
        if usage:
            report["usage"] = usage
        if launch_failed:
            report["launch_failed"] = True
        if requeue_held:
            report["requeue_held"] = True
        stats = self.usage.pop(job_id, None)
        if stats is not None:
            report["tres_usage_max"], report["tres_usage_ave"] = stats.as_tres()
        run_dir = jobstate.run_dir(self.spool, job_id, restarts)
        try:
            record = RunRecord.load(run_dir)
        except jobstate.StateError:
            record = RunRecord(job_id, restarts, time.time())
        record.end, record.epilog_done = report, True
        record.save(run_dir)
        self.unacked[(job_id, restarts)] = report
        self.send_ctld("job_ended", report)

    def acknowledged(self, job_id: int, restarts: int = -1) -> None:
        """A controller has the end report: the run is forgotten (its spool directory too)."""
        for key in [k for k in self.unacked if k[0] == job_id and (restarts < 0 or k[1] == restarts)]:
            del self.unacked[key]
            remove_run(jobstate.run_dir(self.spool, *key, create=False))

    # ------------------------------------------------------------------ srun requests
    def on_srun(self, frames: list[bytes]) -> None:
        ident, rest = frames[0], frames[1:]
        if rest and rest[0] == b"":
            rest = rest[1:]
        opened = self._open(rest)
        if opened is None:
            return
        header, msg = opened
        parent = header.get("id") if isinstance(header.get("id"), str) else None  # whatever the sender wrote
        if isinstance(msg, envelope.WireError):
            body = {"message": str(msg), "code": msg.code}
            self.srv.send_multipart([ident, b""] + envelope.seal(self.auth, "error", body, parent))
            return
        reply: dict[str, Any]
        try:
            if header["type"] == "launch_tasks":
                reply = self.launch_step(header, msg)
            elif header["type"] == "step_stat":
                reply = stepusage.step_stat(self, header["uid"], msg.job_id, msg.step_id)
            elif header["type"] == "attach_step":
                reply = self.attach_step(header["uid"], msg)
            elif header["type"] == "signal_tasks":
                owner = self.step_owners.get((msg.job_id, msg.step_id))
                if header["uid"] not in self.daemon_uids and header["uid"] != owner:
                    reply = {"error": "Access/permission denied"}
                else:
                    step = self.steps.get((msg.job_id, msg.step_id))
                    if step is not None:
                        jobstate.kill_group(step.pid, msg.signal)
                    reply = {"ok": True}
            else:
                reply = {"error": f"unexpected message {header['type']}"}
        except Exception as exc:
            log.exception("error handling %s", header["type"])
            reply = {"error": str(exc)}
        kind = "error" if "error" in reply else "reply"
        body = {"message": reply["error"], "code": "LaunchError"} if kind == "error" else reply
        self.srv.send_multipart([ident, b""] + envelope.seal(self.auth, kind, body, parent))

    def attach_step(self, uid: int, msg: protocol.AttachStep) -> dict[str, Any]:
        """sattach: hand the listener to the step's plurmstepd, which looks in its attach folder
        on each turn of its loop (nodeagent/stepd_attach.py); the step's owner or root only."""
        from plurm.nodeagent import stepd_attach

        step = self.steps.get((msg.job_id, msg.step_id))
        if step is None or not step.alive():
            return {"error": "no tasks running"}
        if uid not in self.daemon_uids and uid != step.record.uid:
            return {"error": "Access/permission denied"}
        stepd_attach.post(self.spool, msg.job_id, msg.step_id, protocol.to_builtins(msg))
        return {"ok": True}

    def launch_step(self, header: dict, msg: protocol.LaunchTasks) -> dict[str, Any]:
        try:
            terms = stepcred.check(self.auth, msg.credential, self.daemon_uids, self.name, msg.job_id,
                                   msg.step_id, header["uid"])
        except auth.AuthError as exc:
            self.log_limit.warning("refused", "refused launch of step %s.%s from uid %s: %s", msg.job_id,
                                   msg.step_id, header["uid"], exc)
            return {"error": f"Invalid job credential: {exc}"}
        msg.uid, msg.gid = terms["uid"], terms["gid"]  # the controller's word, not srun's
        self.step_owners[(msg.job_id, msg.step_id)] = msg.uid
        if msg.node_id < len(msg.nodelist) and msg.nodelist[msg.node_id] == self.name:
            self._bind_step(msg)
        from plurm.nodeagent.prolog import NodeScripts

        scripts = NodeScripts.of(self)
        if msg.job_id not in scripts.epilogs and scripts.run_prolog(
                launch.step_job(msg, terms["nodes"]), self.name, self.conf_path, self.where,
                self.accel.binding) is not None:
            scripts.run_epilog(msg.job_id, self.name, self.conf_path)
            return {"error": "Job's prolog failed"}
        setup = None
        if self.confine.confined:
            here = self._job_uid(msg.job_id) is not None
            try:
                limits = None if here else self.confine.step_job_limits(
                    terms.get("job"), self.name, {i for job in self.jobs.values() for i in job.cpus}, msg.uid, msg.job_id)
                setup = self.confine.start_step(msg.uid, msg.job_id, msg.step_id, here, limits)
            except ConfinementError as exc:
                log.error("step %s.%s failed to launch: %s", msg.job_id, msg.step_id, exc)
                return {"error": str(exc)}
        binding = stepbind.for_launch(self, msg, terms.get("job"))  # --cpu-bind, --mem-bind, --gpu-bind
        try:
            proc = launch.start_stepd(msg, self.name, self.spool, self.key_path, task_prolog=scripts.task_prolog,
                                      cgroup=setup.payload() if setup else None, acct_freq=self.sampler.every_s,
                                      binding=binding, oci=container.load_oci_conf(os.path.dirname(self.conf_path)),
                                      task_epilog=scripts.task_epilog)
        except OSError as exc:
            log.error("step %s.%s failed to launch: %s", msg.job_id, msg.step_id, exc)
            if setup is not None and not here:
                self.confine.release(msg.uid, msg.job_id)  # (the job cgroup was this step's alone)
            return {"error": f"cannot start plurmstepd: {exc.strerror}"}
        record = StepRecord(msg.job_id, msg.step_id, proc.pid, jobstate.start_ticks(proc.pid), msg.uid)
        record.save(self.spool)  # a restarted plurmd can still signal and cancel it
        self.steps[(msg.job_id, msg.step_id)] = RunningStep(record, proc)
        return {"ok": True, "pid": proc.pid}

    def _bind_step(self, msg: protocol.LaunchTasks) -> None:
        """This node's device variables for the step's GPUs (srun does not know the devices)."""
        if msg.node_id < len(msg.tasks_per_node) and msg.job_gres:
            for var in environment.BINDING_VARIABLES:
                msg.environment.pop(var, None)
            for name, indices in msg.job_gres.items():
                msg.environment.update(self.accel.binding(name, indices))

    @property
    def key_path(self) -> str:
        return key_path_for(self.conf_path)

    # ------------------------------------------------------------------ loop
    def run(self) -> None:
        poller = zmq.Poller()
        for sock in self.ctlds:
            poller.register(sock, zmq.POLLIN)
        poller.register(self.srv, zmq.POLLIN)
        poller.register(self._wake_r, zmq.POLLIN)
        try:
            self.reap()  # what ended while no plurmd watched: reported before the node registers
        except Exception:
            log.exception("node daemon: reaping adopted jobs")
        self.register()
        next_ping = time.monotonic() + PING_INTERVAL_S
        while self.running:
            timeout_ms = max(0.0, min(next_ping - time.monotonic(), 0.5)) * 1000
            events = dict(poller.poll(timeout_ms))
            if self._wake_r.fileno() in events:
                try:
                    while self._wake_r.recv(4096):
                        pass
                except BlockingIOError:
                    pass
            for sock in self.ctlds:
                while True:
                    try:
                        self.on_ctld(sock.recv_multipart(zmq.NOBLOCK))
                    except zmq.Again:
                        break
            while True:
                try:
                    self.on_srun(self.srv.recv_multipart(zmq.NOBLOCK))
                except zmq.Again:
                    break
            try:
                self.accel_work.turn(self.jobs.values())
                if self.sampler.due():
                    self.sampler.sample(list(self.jobs.values()))
                self.reap()
                if time.monotonic() >= next_ping:
                    next_ping = time.monotonic() + PING_INTERVAL_S  # (a failing ping waits its turn too)
                    self.ping()
            except Exception:  # keep serving the jobs that run; the next turn retries
                log.exception("node daemon loop error")
        self.confine.close()

    def stop(self, *_args: Any) -> None:
        self.running = False

