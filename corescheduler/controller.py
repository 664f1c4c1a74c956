"""plurmctld: the controller daemon.

One ZeroMQ ROUTER socket on SlurmctldPort serves the user commands and the
node daemons alike.  A message is acted on only as the uid its credential proves
(wire/auth.py), never as the uid it claims.  plurmd connects a DEALER whose routing
id is ``node:NAME:RANDOM``; the controller sends a node's launches only to the routing
id that last spoke for that node with a daemon's credential (root, SlurmUser,
SlurmdUser), so a peer that merely names itself after a node receives nothing.
The loop:

1. drain the messages that are waiting (a bounded batch);
2. handle each through the dispatch table; bad messages get an error reply,
   unauthenticated ones are dropped (and logged, at a bounded rate); a failing
   handler never stops the loop;
3. run the scheduler if something changed;
4. commit the state store, then send every reply and node message of this
   turn (so nothing is acknowledged before it is durable: group commit);
5. timers: time limits, node liveness, purging old jobs.

This module is the shell around the pure core (corescheduler/core.py): it owns the
socket, the clock (``time.time()``), the user database (directory.py) and the state
store; the service layer (service.py) decides what each request means, the core
what happens to jobs and nodes; the shell writes the core's effects and sends its
messages.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import Any

import zmq

from plurm.common.ratelimit import RateLimitedLog
from plurm.wire import auth, authtype, envelope, model, protocol, stepcred
from plurm.wire.hardening import bind_address, guard, guarded_router
from plurm.wire.client import daemon_uids, key_path_for
from plurm.corescheduler.admission import LISTEN_BACKLOG, Admission
from plurm.corescheduler.configure import core_from_conf, decay_half_life
from plurm.corescheduler.dependency import dependency_targets
from plurm.corescheduler import dynnodes_shell
from plurm.corescheduler.directory import Directory
from plurm.corescheduler import jwt_auth
from plurm.corescheduler.effects import Outgoing
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.failover_shell import FailoverShell
from plurm.corescheduler.gpu_readings import GpuReadings
from plurm.corescheduler.journal_shell import EventShell
from plurm.corescheduler.mailer import Mailer
from plurm.corescheduler.service import Service
from plurm.corescheduler import stats_shell
from plurm.corescheduler.stats import Stats
from plurm.corescheduler import failover
from plurm.corescheduler.store import StoreError
from plurm.corescheduler.stores import open_store

log = logging.getLogger("plurmctld")

NODE_PREFIX = b"node:"
BATCH_LIMIT = 512
TICK_S = 0.5
# Messages only these senders may send (node daemons reporting).
NODE_MESSAGES = frozenset({"node_register", "node_ping", "job_ended", "job_frozen"})
# slurm.conf keys a reconfigure does not apply (Slurm asks for the daemons' restart too).
RESTART_KEYS = ("SlurmctldHost", "SlurmctldPort", "SlurmdPort", "AuthType", "StateSaveLocation",
                "SlurmUser", "ClusterName")
# Messages anyone may send, even a uid the user database does not know.
OPEN_MESSAGES = frozenset({"ping", "config"})


class Controller(FailoverShell):
    def __init__(self, conf_path: str, host: str | None = None) -> None:
        from plurm.grammar.slurmconf import load_slurm_conf

        self.conf_path = os.path.abspath(conf_path)
        self.conf = load_slurm_conf(self.conf_path)
        for warning in self.conf.warnings:
            log.warning("%s", warning)
        self.auth = authtype.load(self.conf.get("AuthType"), key_path_for(self.conf_path), self.conf.get("AuthInfo"))
        self.daemon_uids = daemon_uids([u for u in (self.conf.get("SlurmUser"), self.conf.get("SlurmdUser")) if u]
                                       + [str(os.getuid())])
        self.auth = jwt_auth.with_tokens(self.auth, self.conf, self.daemon_uids)  # AuthAltTypes=auth/jwt
        self.node_routes: dict[str, bytes] = {}  # node -> routing id its daemon last spoke from
        self.log_limit = RateLimitedLog(log)
        self.stats = Stats(time.time())  # sdiag's counters (stats.py)
        self.gpu_readings = GpuReadings()  # the nodes' last accelerator readings, for /metrics
        self.admission = Admission.from_conf(self.conf)  # busy refusals under overload (admission.py)
        # Which SlurmctldHost entry this is, the store (SQLite or PostgreSQL) and the lease that
        # makes one controller of several the active one (failover.py, lease.py).
        self.endpoint = failover.choose_endpoint(self.conf.slurmctld_endpoints, host)
        self.store = open_store(self.conf.state_save_location
                                or os.path.join(os.path.dirname(self.conf_path), "state"))
        self.election = failover.Election(self.store, self.endpoint, [n for n, _ in self.conf.slurmctld_endpoints],
                                          float(self.conf.get_int("SlurmctldTimeout", 120) or 120))
        self.store_failure = failover.StoreFailure(log)
        self.directory = Directory()
        self.mailer = Mailer(self.conf.get("MailProg"), self.conf.get("MailDomain"))  # --mail-type (mailer.py)
        self.core: Any = None  # None while this controller stands by
        self.service: Any = None
        if self.election.start():
            self.load_state()
        self.replays = envelope.ReplayGuard()
        self.ctx = zmq.Context()
        self.sock = guarded_router(self.ctx, self.conf)  # bounds on what a peer may cost (hardening.py)
        self.sock.setsockopt(zmq.LINGER, 1000)
        self.sock.setsockopt(zmq.SNDHWM, 100000)
        self.sock.setsockopt(zmq.BACKLOG, LISTEN_BACKLOG)  # (admission.py)
        self.bind_addr = bind_address(self.endpoint.addr)
        self.peer_guard = guard(self.sock, self.conf.slurmctld_port)
        self.sock.bind(f"tcp://{self.bind_addr}:{self.conf.slurmctld_port}")
        self.outbox: list[list[bytes]] = []
        # What each outbox entry is, should the commit fail: index -> (ident, parent) of a reply
        # that reports success, or None for a message to a node (see FailoverShell.refuse_turn).
        self.outbox_kinds: dict[int, tuple[bytes, str | None] | None] = {}
        self.running = True
        self.handlers: dict[str, Callable[[dict, Any, bytes], Any]] = {
            "submit_job": self.on_submit,
            "submit_jobs": self.on_submit_jobs,
            "job_info": self.on_job_info,
            "node_info": self.on_node_info,
            "cancel_job": self.on_cancel,
            "update_job": self.on_update_job,
            "requeue_job": self.on_requeue_job,
            "suspend_job": self.on_suspend_job,
            "step_info": self.on_step_info,
            "update_node": self.on_update_node,
            "reboot_nodes": self.on_reboot_nodes,
            "reservation": self.on_reservation,
            "reconfigure": self.on_reconfigure,
            "create_node": lambda header, msg, ident: dynnodes_shell.on_create(self, header, msg, ident),
            "delete_node": lambda header, msg, ident: dynnodes_shell.on_delete(self, header, msg, ident),
            "step_create": self.on_step_create,
            "step_complete": self.on_step_complete,
            "job_complete": self.on_job_complete,
            "acct_query": self.on_acct_query,
            "priority_factors": self.on_priority_factors,
            "acctmgr": self.on_acctmgr,
            "share_info": self.on_share_info,
            "config": self.on_config,
            "ping": self.on_ping,
            "auth_token": self.on_auth_token,
            "stats": lambda header, msg, ident: stats_shell.answer(self, header, msg),
            "takeover": self.on_takeover,
            "node_register": self.on_node_register,
            "node_ping": self.on_node_ping,
            "job_ended": self.on_job_ended,
            "job_frozen": self.on_job_frozen,
        }
        self.event_stream = EventShell(self)  # the event journal and journal_subscribe (journal_shell.py)
        if self.core is None:
            log.info("plurmctld (%s, %s) listening on %s:%s (%s): standing by", self.endpoint.name,
                     self.endpoint.mode, self.bind_addr, self.conf.slurmctld_port, self.auth.name)
        else:
            log.info("plurmctld listening on %s:%s (%s), %d nodes, %d jobs restored", self.bind_addr,
                     self.conf.slurmctld_port, self.auth.name, len(self.core.nodes), len(self.core.jobs))

    def load_state(self) -> None:
        """The core, rebuilt from the store alone: at start, on taking over, after a failed commit."""
        now = time.time()
        jobs = self.store.load_jobs()
        running = [j.job_id for j in jobs if j.state == model.RUNNING]
        next_id = self.store.get_meta("next_job_id")
        self.core = core_from_conf(
            self.conf, accounts=self.store.load_accounts(decay_half_life(self.conf)), jobs=jobs,
            open_steps=[s for s in self.store.acct_steps(running) if s.end_time is None],
            next_job_id=int(next_id) if next_id else None, now=now,
            slurm_user=self.directory.cluster_identity().user, dynamic_nodes=dynnodes_shell.stored_nodes(self))
        dynnodes_shell.after_load(self)  # MaxNodeCount, the partitions dynamic nodes join (core_dynnodes.py)
        self._seed_archive(self.core.dependencies.referenced_ids())
        self.core.restore_node_admin(self.store.get_meta("node_admin"), now)
        self.core.restore_reservations(self.store.get_meta("reservations"), now)  # (core_resv.py)
        self.service = Service(self.core)

    # ------------------------------------------------------------------ applying decisions
    def _seed_archive(self, job_ids: set[int]) -> None:
        """Final states of purged jobs that dependencies name, from accounting (the core
        reads no store: it gets them before it needs them)."""
        missing = [i for i in job_ids if i not in self.core.jobs and i not in self.core.archive]
        if missing:
            for job in self.store.acct_jobs(job_ids=missing):
                self.core.archive[job.job_id] = (job.state, job.array_job_id, job.array_task_id)

    def apply_effects(self) -> None:
        """Write what the core changed (the commit in flush() makes it durable)."""
        effects = self.core.take_effects()
        self.event_stream.observe(effects)  # job and step events, published once committed
        self.store.apply(effects)
        if self.core.accounts.dirty:
            self.store.save_accounts(self.core.accounts)
        node_admin = self.core.take_node_admin()  # drains, downs, reboots: kept across restarts
        if node_admin is not None:
            self.store.set_meta("node_admin", node_admin)
        dynnodes_shell.persist(self)  # scontrol create/delete node, plurmd -Z (core_dynnodes.py)
        reservations = self.core.take_reservations()  # scontrol create reservation ... (core_resv.py)
        if reservations is not None:
            self.store.set_meta("reservations", reservations)

    # ------------------------------------------------------------------ transport
    def reply(self, ident: bytes, header: dict, body: Any) -> None:
        payload = body if isinstance(body, bytes) else protocol.encode(body)
        self.outbox_kinds[len(self.outbox)] = (ident, header.get("id"))
        self.outbox.append([ident, b""] + envelope.seal_raw(self.auth, "reply", payload, header.get("id")))

    def reply_error(self, ident: bytes, parent: str | None, message: str, code: str,
                    detail: str | None = None) -> None:
        body = {"message": message, "code": code}
        if detail:
            body["detail"] = detail
        self.outbox.append([ident, b""] + envelope.seal(self.auth, "error", body, parent))

    def send_node(self, out: Outgoing) -> None:
        body = out.body
        if out.msg_type == "launch_job":  # the core keeps no scripts: they are the store's
            script, environment = self.store.get_script(body["job_id"])
            body = dict(body, script=script or "", environment=environment)
        route = self.node_routes.get(out.node)
        if route is None:  # not heard from yet: it registers, and the core resends what matters
            log.debug("no route to node %s for %s", out.node, out.msg_type)
            return
        self.outbox_kinds[len(self.outbox)] = None
        # msgspec, as the replies: one launch body per job, ~7x cheaper than lightjson (issue 17)
        self.outbox.append([route, b""] + envelope.seal_raw(self.auth, out.msg_type, protocol.encode(body)))

    def flush(self) -> None:
        try:
            if self.core is not None:
                self.apply_effects()
            if not self.outbox and not self.store.dirty:
                self.store.end_read()  # no transaction left open: a paused controller holds no locks
                self.send_mail()
                return
            if self.store.dirty:
                started = time.monotonic()
                self.store.commit()  # durable before anything is acknowledged
                self.election.renewed(started)  # the commit renewed the lease in its transaction
            else:
                self.store.end_read()
            self.send_mail()  # (what it tells of is durable now)
        except StoreError as exc:  # never a crash: this turn's changes are refused, state rolled back
            self.refuse_turn(exc)
        self.event_stream.publish()  # (after the commit: events of a refused turn are never sent)
        for frames in self.outbox:
            try:
                self.sock.send_multipart(frames, flags=zmq.NOBLOCK)
            except zmq.ZMQError as exc:  # peer gone, queue full: the peer retries
                log.debug("could not send to %r: %s", frames[0], exc)
        self.outbox.clear()
        self.outbox_kinds.clear()

    def send_mail(self) -> None:
        """The core's job mail to MailProg, without waiting for it (mailer.py); reaps the ones done."""
        self.mailer.send(self.core.take_mail() if self.core is not None else ())

    def handle(self, frames: list[bytes]) -> None:
        if len(frames) < 2:
            return
        ident = frames[0]
        body_frames = frames[2:] if frames[1] == b"" else frames[1:]
        try:
            header, raw, sender = envelope.open_envelope(self.auth, body_frames)
            self.replays.check(header)
        except envelope.AuthError as exc:
            self.log_limit.warning("unauthenticated", "dropped message from unauthenticated peer: %s", exc)
            return
        except envelope.WireError as exc:
            self.log_limit.warning("malformed", "bad message: %s", exc)
            self.reply_error(ident, None, str(exc), exc.code)
            return
        except Exception as exc:  # a bug in the checks: never a way to stop the daemon
            self.log_limit.warning("unauthenticated", "dropped unreadable message: %r", exc)
            return
        # From here on the sender is who the credential proves, whatever the header claimed.
        header["uid"], header["gid"] = sender.uid, sender.gid
        msg_type = header["type"]
        refusal = self._refusal(msg_type, sender) or self.unavailable(msg_type)
        if refusal is not None:
            if refusal[1] in (failover.STANDBY_CODE, failover.STORE_CODE):
                if msg_type not in NODE_MESSAGES:  # a node is not answered: it resends
                    self.reply_error(ident, header.get("id"), *refusal)
                return
            self.log_limit.warning("refused", "refused %s from uid %s: %s", msg_type, sender.uid, refusal[0])
            self.reply_error(ident, header.get("id"), *refusal)
            return
        handler = self.handlers.get(msg_type)
        if handler is None:
            self.log_limit.warning("unknown", "unknown message type %r", msg_type)
            self.reply_error(ident, header.get("id"), f"unknown message type {msg_type!r}", "UnknownMessage")
            return
        try:
            msg = protocol.decode_body(msg_type, raw)
        except protocol.SchemaError as exc:
            self.log_limit.warning("malformed", "%s", exc)
            self.reply_error(ident, header.get("id"), str(exc), "MalformedMessage")
            return
        began = time.perf_counter()  # (sdiag's RPC statistics: stats.py)
        try:
            result = handler(header, msg, ident)
        except RequestError as exc:
            self.reply_error(ident, header.get("id"), str(exc), exc.code, exc.detail)
            return
        except Exception as exc:  # never let one request take the daemon down
            log.exception("error handling %s", msg_type)
            self.reply_error(ident, header.get("id"), f"internal error: {exc}", "InternalError")
            return
        finally:
            self.stats.rpc(msg_type, header["uid"], time.perf_counter() - began)
            if self.service is not None:  # a standby answers ping and takeover only
                self.dispatch(self.service.take_messages())
        if result is not None:
            self.reply(ident, header, result)

    def _refusal(self, msg_type: str, sender: auth.Verified) -> tuple[str, str] | None:
        """Why ``sender`` may not send ``msg_type`` at all (None: the handler decides)."""
        token_refusal = jwt_auth.refusal(sender, msg_type, NODE_MESSAGES)  # a bad or misused JWT
        if token_refusal is not None:
            return token_refusal
        if msg_type in NODE_MESSAGES:
            if sender.uid not in self.daemon_uids:
                return "Access/permission denied: node messages come from node daemons only", "AccessDenied"
            return None
        if msg_type not in OPEN_MESSAGES and not self.directory.identity(sender.uid, sender.gid).known:
            return "Invalid user id", "InvalidUserId"
        return None

    def dispatch(self, items: list[Outgoing]) -> None:
        self.apply_effects()  # a launch reads the script its submission stored
        for item in items:
            try:
                self.send_node(item)
            except StoreError:  # its script unreadable: the commit refuses the whole turn
                self.store.dirty = True

    # ------------------------------------------------------------------ loop
    def run(self) -> None:
        poller = zmq.Poller()
        poller.register(self.sock, zmq.POLLIN)
        next_tick = time.monotonic()
        while self.running:
            timeout = max(0.0, next_tick - time.monotonic())
            events = dict(poller.poll(timeout * 1000))
            if events.get(self.sock):
                self.admission.new_turn(time.monotonic())
                for _ in range(BATCH_LIMIT):
                    try:
                        frames = self.sock.recv_multipart(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    self.handle(frames)
            # Answer first (the submissions are durable once committed), then schedule:
            # a scheduling pass never delays a reply.
            self.flush()
            self.failover_turn()
            if self.core is None or self.store_failure.failed:
                # Standing by, or the store cannot write: nothing to schedule or time out.
                next_tick = max(next_tick, time.monotonic() + TICK_S)
                continue
            try:
                if time.monotonic() >= next_tick:
                    self.dispatch(self.core.tick(time.time()))
                    next_tick = time.monotonic() + TICK_S
                if self.core.need_schedule:
                    began, backfill_due = time.perf_counter(), self.core.next_backfill
                    out = self.core.schedule(time.time())
                    self.stats.cycle(self.core.next_backfill != backfill_due, time.perf_counter() - began,
                                     self.core.sched_depth, time.time())  # (sdiag: stats.py)
                    self.dispatch(out)
            except Exception:  # a scheduling bug must not stop the controller
                log.exception("scheduling pass failed")
                self.core.need_schedule = False
            self.flush()
        self.shut_down()

    def stop(self, *_args: Any) -> None:
        self.running = False

    # ------------------------------------------------------------------ handlers: commands
    # Thin: who sent it (from the authenticated header), then the service layer.
    def _who(self, header: dict):
        return self.directory.identity(header["uid"], header["gid"])

    def on_submit(self, header: dict, msg: protocol.SubmitJob, ident: bytes, bulk: bool = False) -> Any:
        who = self._submitter(header, msg.spec.other_options)
        # Overloaded: refused before anything is recorded, the client retries (admission.py).
        self.admission.admit(time.monotonic(), self.core.jobs, msg, who.uid, self.service.submit_keys, bulk,
                             time.time() - header["time"])
        if msg.spec.dependency:
            self._seed_archive(dependency_targets(msg.spec.dependency))
        return self.service.submit(msg, who, time.time())

    def on_submit_jobs(self, header: dict, msg: protocol.SubmitJobs, ident: bytes) -> Any:
        # Bulk: all in this turn, so flush() makes them durable in one commit before the reply.
        self.admission.admit_bulk(time.monotonic(), time.time() - header["time"])
        return self.service.submit_jobs(msg, lambda one: self.on_submit(header, one, ident, True))

    def _submitter(self, header: dict, options: dict[str, str]) -> Any:
        """Who a job is submitted as: its sender, or for root and SlurmUser the user and group
        that --uid/--gid name (with --uid alone the sender's group stays, as in Slurm)."""
        who = self._who(header)
        if "uid" not in options and "gid" not in options:
            return who
        if not who.operator:
            raise RequestError("Access/permission denied", "AccessDenied")
        uid = self.directory.resolve_user(options["uid"]) if "uid" in options else who.uid
        gid = self.directory.resolve_group(options["gid"]) if "gid" in options else who.gid
        if uid is None or gid is None:
            raise RequestError("Invalid user id" if uid is None else "Invalid group id",
                               "InvalidUserId" if uid is None else "InvalidGroupId")
        return self.directory.identity(uid, gid)

    def on_job_info(self, header: dict, msg: protocol.JobInfoRequest, ident: bytes) -> Any:
        return protocol.encode({"jobs": self.service.job_info(msg, self._who(header)), "now": time.time(),
                                "cluster": self.core.cluster_name})

    def on_node_info(self, header: dict, msg: protocol.NodeInfoRequest, ident: bytes) -> Any:
        return protocol.encode(dict(self.service.node_info(msg, self._who(header)), now=time.time(), cluster=self.core.cluster_name))

    def on_cancel(self, header: dict, msg: protocol.CancelJob, ident: bytes) -> Any:
        return self.service.cancel(msg, self._who(header), time.time())

    def on_update_job(self, header: dict, msg: protocol.UpdateJob, ident: bytes) -> Any:
        return self.service.update_job(msg, self._who(header), time.time())

    def on_requeue_job(self, header: dict, msg: protocol.RequeueJob, ident: bytes) -> Any:
        return self.service.requeue_job(msg, self._who(header), time.time())

    def on_suspend_job(self, header: dict, msg: protocol.SuspendJob, ident: bytes) -> Any:
        return self.service.suspend_job(msg, self._who(header), time.time())

    def on_step_info(self, header: dict, msg: protocol.StepInfoRequest, ident: bytes) -> Any:
        return protocol.encode(dict(self.service.step_info(msg, self._who(header)), now=time.time()))

    def on_update_node(self, header: dict, msg: protocol.UpdateNode, ident: bytes) -> Any:
        return self.service.update_node(msg, self._who(header), time.time())

    def on_step_create(self, header: dict, msg: protocol.StepCreate, ident: bytes) -> Any:
        who = self._who(header)
        step = self.service.step_create(msg, who, time.time())
        if step.get("no_allocate"):  # srun -Z: no job; the operator's own tasks on the whole nodes
            step["credential"] = stepcred.issue(self.auth, step["job_id"], step["step_id"], who.uid, who.gid,
                                                list(step["nodes"]), job=step.pop("allocation"))
            return step
        job = self.core.jobs[msg.job_id]  # the job's owner runs its tasks, whoever asked
        # With the job's allocation: the limits of its cgroup on a node where it has no batch run.
        allocation = {"nodes": list(job.nodes), "cpus": list(job.cpus), "mem": list(job.mem),
                      "gres_alloc": [dict(units) for units in job.gres_alloc]}
        step["credential"] = stepcred.issue(self.auth, msg.job_id, step["step_id"], job.spec.user_id,
                                            job.spec.group_id, list(step["nodes"]), job=allocation)
        return step

    def on_step_complete(self, header: dict, msg: protocol.StepComplete, ident: bytes) -> Any:
        return self.service.step_complete(msg, self._who(header), time.time())

    def on_job_complete(self, header: dict, msg: protocol.JobComplete, ident: bytes) -> Any:
        return self.service.job_complete(msg, self._who(header), time.time())

    def on_acct_query(self, header: dict, msg: protocol.AcctQuery, ident: bytes) -> Any:
        from plurm.corescheduler.accounting import query

        self.apply_effects()  # sacct reads the store: let it see this turn's changes
        return protocol.encode(query(self.store, self.core, msg, self._who(header)))

    def on_priority_factors(self, header: dict, msg: protocol.PriorityFactorsRequest, ident: bytes) -> Any:
        return protocol.encode(self.service.priority_factors(msg, self.conf.get("PriorityType") or "priority/basic",
                                                             time.time(), self._who(header)))

    def on_acctmgr(self, header: dict, msg: protocol.AcctMgr, ident: bytes) -> Any:
        return self.service.acctmgr(msg, self._who(header), time.time())

    def on_share_info(self, header: dict, msg: protocol.ShareInfoRequest, ident: bytes) -> Any:
        enforce = {w.strip().lower() for w in (self.conf.get("AccountingStorageEnforce") or "").split(",")}
        return self.service.share_info(time.time(), self._who(header), run_mins=bool(enforce & {"limits", "safe"}))

    def on_auth_token(self, header: dict, msg: protocol.AuthTokenRequest, ident: bytes) -> Any:
        return jwt_auth.token_reply(self.auth, msg.lifespan, msg.username, self._who(header), time.time())

    def on_config(self, header: dict, msg: protocol.ConfigRequest, ident: bytes) -> Any:
        return {"options": self.conf.options, "path": self.conf_path, "cluster": self.core.cluster_name}

    # ------------------------------------------------------------------ handlers: node daemons
    def _node_of(self, ident: bytes, name: str) -> str:
        """The node a daemon's message is about; its routing id becomes the node's route
        (only daemons' credentials get here: see _refusal)."""
        if name not in self.core.nodes:
            raise RequestError(f"Invalid node name specified: {name}", "InvalidNodeName")
        if self.node_routes.get(name) != ident:
            self.node_routes[name] = ident
        return name

    def on_node_register(self, header: dict, msg: protocol.NodeRegister, ident: bytes) -> Any:
        dynnodes_shell.on_register(self, msg)  # plurmd -Z: a node slurm.conf lacks is created
        name = self._node_of(ident, msg.node)
        self.service.node_register(name, msg, time.time())
        log.info("node %s registered (%d running jobs)", name, len(msg.running_jobs))
        return None

    def on_node_ping(self, header: dict, msg: protocol.NodePing, ident: bytes) -> Any:
        name = self._node_of(ident, msg.node)
        self.service.node_ping(name, msg, time.time())
        self.gpu_readings.update(self.core.nodes.get(name), msg.gpu_usage, time.time())
        return None

    def on_job_ended(self, header: dict, msg: protocol.JobEnded, ident: bytes) -> Any:
        self.service.job_ended(self._node_of(ident, msg.node), msg, time.time())
        return None

    def on_job_frozen(self, header: dict, msg: protocol.JobFrozen, ident: bytes) -> Any:
        name = self._node_of(ident, msg.node)
        try:
            self.service.job_frozen(name, msg, time.time())
        except RequestError as exc:  # a node is not answered (as for its other reports): logged
            self.log_limit.warning("job_frozen", "job_frozen from node %s refused: %s", name, exc)
        return None

    # ------------------------------------------------------------------ handlers: node administration
    def on_reservation(self, header: dict, msg: protocol.ReservationRequest, ident: bytes) -> Any:
        return self.service.reservation(msg, self._who(header), time.time(),
                                        lambda name: self.directory.resolve_user(name) is not None)

    def on_reboot_nodes(self, header: dict, msg: protocol.RebootNodes, ident: bytes) -> Any:
        return self.service.reboot_nodes(msg, self._who(header), time.time())

    def on_reconfigure(self, header: dict, msg: protocol.Reconfigure, ident: bytes) -> Any:
        """scontrol reconfigure: read slurm.conf again; a file with an error is refused with the
        parser's message and the running configuration stays (core_reconfig.py)."""
        from plurm.corescheduler.configure import reconfig_parts
        from plurm.grammar.slurmconf import ConfError, load_slurm_conf

        who = self._who(header)
        self.service.require_admin(who)  # (before the file is read: others learn nothing of it)
        try:
            conf = load_slurm_conf(self.conf_path)
        except (ConfError, OSError) as exc:
            log.error("reconfigure refused: %s", exc)
            raise RequestError(str(exc), "ConfigError") from None
        try:
            parts = reconfig_parts(conf, self.core.settings.slurm_user)
        except Exception as exc:  # a plugin slurm.conf names that cannot be had: the file's fault
            log.error("reconfigure refused: %s", exc)
            raise RequestError(f"{self.conf_path}: {exc}", "ConfigError") from None
        dynnodes_shell.before_reconfigure(self, parts, conf)  # (dynamic nodes stay)
        changed = self.service.reconfigure(parts, who, time.time())
        dynnodes_shell.after_reconfigure(self, conf)
        for key in RESTART_KEYS:  # (bound or opened at start: a restart applies them)
            if self.conf.get(key) != conf.get(key):
                log.warning("reconfigure: %s changed (%s -> %s): takes effect when plurmctld restarts", key,
                            self.conf.get(key), conf.get(key))
        self.conf = conf
        self.admission = Admission.from_conf(conf)
        self.mailer.configure(conf.get("MailProg"), conf.get("MailDomain"))
        for warning in conf.warnings:
            log.warning("%s", warning)
        log.info("reconfigured from %s: %s", self.conf_path, ", ".join(changed) or "nothing changed")
        return {"ok": True, "changed": changed}
