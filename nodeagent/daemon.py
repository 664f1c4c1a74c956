"""plurmd: the node daemon.

It connects a DEALER (routing id ``node:NAME:RANDOM``: the controller learns it from
the daemon's authenticated messages) to the controller, registers
the node, pings it, runs batch scripts the controller sends, and reports
their end until the controller acknowledges the report: a controller that
was down (even killed with -9) gets every report when it comes back, and
running jobs are never disturbed by its absence.

It also binds a ROUTER on the node's Port for srun: each step's tasks run
under a plurmstepd process (nodeagent/stepd.py), like Slurm's slurmstepd,
so that a misbehaving step cannot take plurmd down.
"""

from __future__ import annotations

import logging
import os
import platform
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import psutil
import zmq

from plurm.common.ratelimit import RateLimitedLog
from plurm.wire import auth, authtype, envelope, protocol, stepcred
from plurm.wire.client import daemon_uids, key_path_for
from plurm.wire.hardening import bind_address, guard, guarded_router
from plurm.common import environment
from plurm.nodeagent import launch
from plurm.nodeagent.devices import NodeDevices, UsageStats

log = logging.getLogger("plurmd")

PING_INTERVAL_S = 2.0
# Accelerator health checks (probe subprocesses): every minute, or PLURM_ACCEL_HEALTH_INTERVAL seconds.
HEALTH_INTERVAL_S = float(os.environ.get("PLURM_ACCEL_HEALTH_INTERVAL", "60"))
# Accelerator usage of running jobs, for accounting: every 30 s, or PLURM_ACCEL_USAGE_INTERVAL.
USAGE_INTERVAL_S = float(os.environ.get("PLURM_ACCEL_USAGE_INTERVAL", "30"))
RESEND_INTERVAL_S = 2.0
VERSION = "22.05.8"


@dataclass
class RunningJob:
    job_id: int
    proc: subprocess.Popen | None
    started: float
    gpus: list[int] = field(default_factory=list)  # this node's gpu units of the job
    steps: dict[int, subprocess.Popen] = field(default_factory=dict)
    kill_at: float | None = None
    timed_out: bool = False


class NodeDaemon:
    def __init__(self, conf_file: str, node_name: str) -> None:
        from plurm.grammar.slurmconf import load_slurm_conf

        self.conf_path = os.path.abspath(conf_file)
        self.conf = load_slurm_conf(self.conf_path)
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
        spool = (self.conf.get("SlurmdSpoolDir") or os.path.join(os.path.dirname(self.conf_path), "spool", "%n"))
        self.spool = spool.replace("%n", node_name).replace("%h", socket.gethostname())
        os.makedirs(self.spool, exist_ok=True)
        self.start_time = time.time()
        self.jobs: dict[int, RunningJob] = {}
        self.steps: dict[tuple[int, int], subprocess.Popen] = {}
        self.unacked: dict[int, dict[str, Any]] = {}
        self.step_kill_at: dict[tuple[int, int], float] = {}
        self.epilog_due: set[int] = set()  # jobs ended here without a batch script: Epilog once their steps are gone
        self.replays = envelope.ReplayGuard()
        self.ctx = zmq.Context()
        self.ctld = self.ctx.socket(zmq.DEALER)
        self.ctld.setsockopt(zmq.ROUTING_ID, b"node:" + node_name.encode() + b":" + os.urandom(8).hex().encode())
        self.ctld.setsockopt(zmq.LINGER, 0)
        self.ctld.setsockopt(zmq.RECONNECT_IVL, 100)
        self.ctld.setsockopt(zmq.RECONNECT_IVL_MAX, 1000)
        self.ctld.connect(f"tcp://{self.conf.slurmctld_addr}:{self.conf.slurmctld_port}")
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
        self._health: threading.Thread | None = None
        self._next_health = time.monotonic() + HEALTH_INTERVAL_S
        self._next_usage = time.monotonic() + min(USAGE_INTERVAL_S, 1.0)
        self.usage: dict[int, UsageStats] = {}
        self.running = True
        self.where = {
            "cluster": self.conf.cluster_name or "cluster",
            "conf_path": self.conf_path,
            "ctld_host": self.conf.slurmctld_host or "localhost",
            "ctld_port": self.conf.slurmctld_port,
        }

    # ------------------------------------------------------------------ messaging
    def send_ctld(self, msg_type: str, body: dict[str, Any]) -> None:
        try:
            self.ctld.send_multipart([b""] + envelope.seal(self.auth, msg_type, body), flags=zmq.NOBLOCK)
        except zmq.Again:
            log.debug("controller queue full; %s dropped (will be resent)", msg_type)

    def register(self) -> None:
        self.send_ctld("node_register", {
            "node": self.name,
            "cpus": self.node_conf.cpus,
            "real_memory": self.node_conf.real_memory,
            "boot_time": psutil.boot_time(),
            "slurmd_start_time": self.start_time,
            "running_jobs": sorted(self.jobs),
            "os": f"{platform.system()} {platform.release()} {platform.version()}",
            "arch": platform.machine(),
            "version": VERSION,
            "cpu_load": os.getloadavg()[0],
            "free_mem": psutil.virtual_memory().available // (1024 * 1024),
            "devices": self.accel.describe(),
            "gres_problems": self.accel.problems,
        })
        for report in self.unacked.values():
            self.send_ctld("job_ended", report)

    def _health_check(self) -> None:
        """Accelerator health in a thread: probes take a while; the loop goes on."""
        if self._health is not None and self._health.is_alive():
            return
        if not self.accel.devices or time.monotonic() < self._next_health:
            return
        self._next_health = time.monotonic() + HEALTH_INTERVAL_S
        self._health = threading.Thread(target=self.accel.check_health, name="accel-health", daemon=True)
        self._health.start()

    def _sample_usage(self) -> None:
        """Accelerator usage of the running jobs, in a thread (probes take a while)."""
        if self._health is not None and self._health.is_alive():
            return
        if not self.accel.devices or time.monotonic() < self._next_usage:
            return
        self._next_usage = time.monotonic() + USAGE_INTERVAL_S
        jobs = {job.job_id: list(job.gpus) for job in self.jobs.values() if job.gpus}
        if jobs:
            self._health = threading.Thread(target=self.accel.sample, args=(jobs, self.usage),
                                            name="accel-usage", daemon=True)
            self._health.start()

    def ping(self) -> None:
        self.send_ctld("node_ping", {
            "node": self.name,
            "running_jobs": sorted(self.jobs),
            "cpu_load": os.getloadavg()[0],
            "free_mem": psutil.virtual_memory().available // (1024 * 1024),
            "unhealthy": dict(self.accel.unhealthy),
        })
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
                self.terminate(msg.job_id, msg.kill_wait, msg.signal, msg.batch_host)
            elif kind == "signal_job":
                self.signal_job(msg.job_id, msg.signal, msg.scope)
            elif kind == "job_ended_ack":
                self.unacked.pop(msg.job_id, None)
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
        if msg.job_id in self.jobs:
            return  # a resent launch
        from plurm.nodeagent.prolog import NodeScripts

        scripts = NodeScripts.of(self)
        if scripts.run_prolog(msg.job, self.name, self.conf_path, self.where, self.accel.binding) is not None:
            scripts.run_epilog(msg.job_id, self.name, self.conf_path)
            self.report_end(msg.job_id, 1, 0, launch_failed=True, requeue_held=True)  # (the node is drained)
            return
        try:
            proc = launch.start_batch(msg, self.name, self.spool, self.where, binding=self.accel.binding,
                                      task_prolog=scripts.task_prolog)
        except launch.LaunchError as exc:
            log.error("job %s failed to launch: %s", msg.job_id, exc)
            scripts.run_epilog(msg.job_id, self.name, self.conf_path)
            self.report_end(msg.job_id, 1, 0, launch_failed=True)
            return
        nodes = msg.job.get("nodes", [])
        gpus = environment.allocated_gpus(msg.job, nodes.index(self.name)) if self.name in nodes else []
        self.jobs[msg.job_id] = RunningJob(msg.job_id, proc, time.time(), gpus)
        log.info("job %s started, pid %s", msg.job_id, proc.pid)

    def _processes(self, job_id: int, scope: str = "all") -> list[subprocess.Popen]:
        """The job's process groups: its batch script ("batch"), its steps ("steps"), or both."""
        procs: list[subprocess.Popen] = []
        job = self.jobs.get(job_id)
        if scope in ("batch", "all") and job is not None and job.proc is not None:
            procs.append(job.proc)
        if scope in ("steps", "all"):
            procs.extend(p for (jid, _), p in self.steps.items() if jid == job_id)
        return procs

    def signal_job(self, job_id: int, signum: int, scope: str = "steps") -> None:
        for proc in self._processes(job_id, scope):
            _kill_group(proc.pid, signum)

    def terminate(self, job_id: int, kill_wait: float, signum: int = signal.SIGTERM, batch_host: str = "") -> None:
        procs = self._processes(job_id)
        if job_id not in self.jobs:  # its steps' node (no batch script here): Epilog when they are gone
            self.epilog_due.add(job_id)
        if not procs:
            if batch_host == self.name and job_id not in self.unacked:
                # The controller waits for a job this node no longer has
                # (plurmd restarted): report it ended, killed.
                self.report_end(job_id, 0, signal.SIGKILL)
            return
        for proc in procs:
            _kill_group(proc.pid, signal.SIGCONT)
            _kill_group(proc.pid, signum)
        job = self.jobs.get(job_id)
        deadline = time.monotonic() + kill_wait
        if job is not None:
            job.kill_at = deadline
        for key, proc in self.steps.items():
            if key[0] == job_id:
                self.step_kill_at[key] = deadline

    def report_end(self, job_id: int, exit_code: int, exit_signal: int, launch_failed: bool = False,
                   requeue_held: bool = False) -> None:
        report = {"node": self.name, "job_id": job_id, "exit_code": exit_code, "exit_signal": exit_signal,
                  "end_time": time.time()}
        if launch_failed:
            report["launch_failed"] = True
        if requeue_held:
            report["requeue_held"] = True
        stats = self.usage.pop(job_id, None)
        if stats is not None:
            report["tres_usage_max"], report["tres_usage_ave"] = stats.as_tres()
        self.unacked[job_id] = report
        self.send_ctld("job_ended", report)

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
            elif header["type"] == "signal_tasks":
                owner = self.step_owners.get((msg.job_id, msg.step_id))
                if header["uid"] not in self.daemon_uids and header["uid"] != owner:
                    reply = {"error": "Access/permission denied"}
                else:
                    proc = self.steps.get((msg.job_id, msg.step_id))
                    if proc is not None:
                        _kill_group(proc.pid, msg.signal)
                    reply = {"ok": True}
            else:
                reply = {"error": f"unexpected message {header['type']}"}
        except Exception as exc:
            log.exception("error handling %s", header["type"])
            reply = {"error": str(exc)}
        kind = "error" if "error" in reply else "reply"
        body = {"message": reply["error"], "code": "LaunchError"} if kind == "error" else reply
        self.srv.send_multipart([ident, b""] + envelope.seal(self.auth, kind, body, parent))

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
                self._step_job(msg, terms["nodes"]), self.name, self.conf_path, self.where,
                self.accel.binding) is not None:
            scripts.run_epilog(msg.job_id, self.name, self.conf_path)
            return {"error": "Job's prolog failed"}
        proc = launch.start_stepd(msg, self.name, self.spool, self.key_path, task_prolog=scripts.task_prolog)
        self.steps[(msg.job_id, msg.step_id)] = proc
        return {"ok": True, "pid": proc.pid}

    def _bind_step(self, msg: protocol.LaunchTasks) -> None:
        """This node's device variables for the step's GPUs (srun does not know the devices)."""
        if msg.node_id < len(msg.tasks_per_node) and msg.job_gres:
            for var in environment.BINDING_VARIABLES:
                msg.environment.pop(var, None)
            for name, indices in msg.job_gres.items():
                msg.environment.update(self.accel.binding(name, indices))

    @staticmethod
    def _step_job(msg: protocol.LaunchTasks, nodes: list[str]) -> dict[str, Any]:
        """The job as a Prolog sees it, on a node where its first process is a step (slurmd runs
        the Prolog at a job's first launch on each node): from the step's credential and
        environment."""
        import pwd

        try:
            user = pwd.getpwuid(msg.uid).pw_name
        except KeyError:
            user = str(msg.uid)
        env = msg.environment
        job_nodes = _expand(env["SLURM_JOB_NODELIST"]) if env.get("SLURM_JOB_NODELIST") else list(msg.nodelist)
        return {"job_id": msg.job_id, "partition": env.get("SLURM_JOB_PARTITION", ""), "nodes": job_nodes or nodes,
                "spec": {"user_id": msg.uid, "group_id": msg.gid, "user": user}}

    @property
    def key_path(self) -> str:
        return key_path_for(self.conf_path)

    # ------------------------------------------------------------------ children
    def reap(self) -> None:
        now = time.monotonic()
        for job_id, job in list(self.jobs.items()):
            if job.proc is None:
                continue
            status = job.proc.poll()
            if status is None:
                if job.kill_at is not None and now >= job.kill_at:
                    _kill_group(job.proc.pid, signal.SIGKILL)
                    job.kill_at = None
                continue
            # The script ended: its other processes (backgrounded) go with it.
            _kill_group(job.proc.pid, signal.SIGKILL)
            del self.jobs[job_id]
            exit_code, exit_signal = (0, -status) if status < 0 else (status, 0)
            log.info("job %s ended: exit %s signal %s", job_id, exit_code, exit_signal)
            from plurm.nodeagent.prolog import NodeScripts

            NodeScripts.of(self).run_epilog(job_id, self.name, self.conf_path)
            self.report_end(job_id, exit_code, exit_signal)
        for key, proc in list(self.steps.items()):
            if proc.poll() is not None:
                del self.steps[key]
                self.step_kill_at.pop(key, None)
            elif key in self.step_kill_at and now >= self.step_kill_at[key]:
                _kill_group(proc.pid, signal.SIGKILL)
                del self.step_kill_at[key]
        for job_id in [j for j in self.epilog_due if not any(k[0] == j for k in self.steps)]:
            self.epilog_due.discard(job_id)
            from plurm.nodeagent.prolog import NodeScripts

            NodeScripts.of(self).run_epilog(job_id, self.name, self.conf_path)

    # ------------------------------------------------------------------ loop
    def run(self) -> None:
        poller = zmq.Poller()
        poller.register(self.ctld, zmq.POLLIN)
        poller.register(self.srv, zmq.POLLIN)
        poller.register(self._wake_r, zmq.POLLIN)
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
            while True:
                try:
                    self.on_ctld(self.ctld.recv_multipart(zmq.NOBLOCK))
                except zmq.Again:
                    break
            while True:
                try:
                    self.on_srun(self.srv.recv_multipart(zmq.NOBLOCK))
                except zmq.Again:
                    break
            try:
                self._health_check()
                self._sample_usage()
                self.reap()
                if time.monotonic() >= next_ping:
                    self.ping()
                    next_ping = time.monotonic() + PING_INTERVAL_S
            except Exception:  # keep serving the jobs that run; the next turn retries
                log.exception("node daemon loop error")

    def stop(self, *_args: Any) -> None:
        self.running = False


def _expand(hostlist: str) -> list[str]:
    from plurm.grammar.hostlist import expand

    return expand(hostlist)


def _kill_group(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass
