"""plurmctld: the controller daemon.

One ZeroMQ ROUTER socket on SlurmctldPort serves the user commands and the
node daemons alike (plurmd connects a DEALER whose routing id is
``node:NAME``, so the controller can send it launches).  The loop:

1. drain the messages that are waiting (a bounded batch);
2. handle each through the dispatch table; bad messages get an error reply,
   unauthenticated ones are dropped; a failing handler never stops the loop;
3. run the scheduler if something changed;
4. commit the state store, then send every reply and node message of this
   turn (so nothing is acknowledged before it is durable: group commit);
5. timers: time limits, node liveness, purging old jobs.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import Any

import zmq

from plurm.wire import model, protocol, envelope
from plurm.wire.client import key_path_for
from plurm.wire.model import Node, Partition
from plurm.corescheduler.state import ClusterState, Outgoing, RequestError, parse_task_ids
from plurm.corescheduler.store import StateStore

log = logging.getLogger("plurmctld")

NODE_PREFIX = b"node:"
BATCH_LIMIT = 512
TICK_S = 0.5


def nodes_from_conf(conf) -> dict[str, Node]:
    nodes: dict[str, Node] = {}
    for nc in conf.nodes.values():
        nodes[nc.name] = Node(
            name=nc.name, addr=nc.addr, hostname=nc.hostname, port=nc.port or conf.slurmd_port,
            cpus=nc.cpus, sockets=nc.sockets, cores_per_socket=nc.cores_per_socket,
            threads_per_core=nc.threads_per_core, boards=nc.boards, real_memory=nc.real_memory,
            tmp_disk=nc.tmp_disk, weight=nc.weight, features=list(nc.features), gres=list(nc.gres),
        )
        state = (nc.state or "").upper()
        if state.startswith("DRAIN"):
            nodes[nc.name].drain = True
            nodes[nc.name].reason = nc.raw.get("Reason") or "configured DRAIN"
        elif state.startswith("DOWN"):
            nodes[nc.name].down = True
            nodes[nc.name].reason = nc.raw.get("Reason") or "configured DOWN"
    return nodes


def partitions_from_conf(conf) -> dict[str, Partition]:
    return {
        pc.name: Partition(
            name=pc.name, nodes=list(pc.nodes), default=pc.default, max_time=pc.max_time,
            default_time=pc.default_time, state=pc.state, max_nodes=pc.max_nodes, min_nodes=pc.min_nodes,
            priority_tier=pc.priority_tier, priority_job_factor=pc.priority_job_factor,
            oversubscribe=pc.oversubscribe, def_mem_per_cpu=pc.def_mem_per_cpu,
            max_mem_per_cpu=pc.max_mem_per_cpu, hidden=pc.hidden, allow_accounts=pc.allow_accounts,
            allow_groups=pc.allow_groups, allow_qos=pc.allow_qos,
            preempt_mode=pc.raw.get("PreemptMode"), grace_time=int(pc.raw.get("GraceTime") or 0),
        )
        for pc in conf.partitions.values()
    }


def priority_policy(conf: Any) -> Any:
    """The policy object of the priority plugin slurm.conf's PriorityType names."""
    from plurm.plugins.manager import get_plugin_manager
    from plurm.plugins.types import resolve

    kind = (conf.get("PriorityType") or "priority/basic").split("/", 1)[-1]
    return resolve(get_plugin_manager().get_priority_plugin(kind).factory)(conf)


def preempt_policy(conf: Any) -> Any:
    """The policy object of the preemption plugin slurm.conf's PreemptType names."""
    from plurm.plugins.manager import get_plugin_manager
    from plurm.plugins.types import resolve

    kind = (conf.get("PreemptType") or "preempt/none").split("/", 1)[-1]
    return resolve(get_plugin_manager().get_preempt_plugin(kind).factory)(conf)


def _seconds(value: str | None, default: float) -> float:
    """A slurm.conf duration given in minutes (or [D-]HH:MM:SS), as seconds."""
    if not value:
        return default
    from plurm.grammar.timefmt import parse_time_limit

    minutes = parse_time_limit(value)
    return minutes * 60.0 if minutes else default


class Controller:
    def __init__(self, conf_path: str) -> None:
        from plurm.grammar.slurmconf import load_slurm_conf

        self.conf_path = os.path.abspath(conf_path)
        self.conf = load_slurm_conf(self.conf_path)
        for warning in self.conf.warnings:
            log.warning("%s", warning)
        self.key = envelope.load_key(key_path_for(self.conf_path))
        state_dir = self.conf.state_save_location or os.path.join(os.path.dirname(self.conf_path), "state")
        os.makedirs(state_dir, exist_ok=True)
        self.store = StateStore(os.path.join(state_dir, "plurm_state.db"))
        def_mem = self.conf.get("DefMemPerCPU")
        self.state = ClusterState(
            self.store, nodes_from_conf(self.conf), partitions_from_conf(self.conf),
            cluster_name=self.conf.cluster_name or "cluster",
            kill_wait=float(self.conf.get("KillWait") or 30),
            default_mem_per_cpu=int(def_mem) if def_mem else None,
            slurmd_timeout=float(self.conf.get("SlurmdTimeout") or 300),
            min_job_age=float(self.conf.get("MinJobAge") or 300),
            max_array_size=int(self.conf.get("MaxArraySize") or 1001),
            first_job_id=int(self.conf.get("FirstJobId") or 1),
            priority_policy=priority_policy(self.conf),
            preempt_policy=preempt_policy(self.conf),
            preempt_mode=(self.conf.get("PreemptMode") or "OFF"),
            preempt_exempt_s=_seconds(self.conf.get("PreemptExemptTime"), 0.0),
            decay_half_life_s=_seconds(self.conf.get("PriorityDecayHalfLife"), 7 * 86400.0),
            priority_calc_period=_seconds(self.conf.get("PriorityCalcPeriod"), 300.0),
        )
        self.state.kill_invalid_depend = "kill_invalid_depend" in (self.conf.get("SchedulerParameters") or "")
        self.state.enforce_associations = "assoc" in (self.conf.get("AccountingStorageEnforce") or "").lower()
        from plurm.corescheduler.backfill import BackfillParams

        self.state.scheduler_type = (self.conf.get("SchedulerType") or "sched/backfill").lower()
        self.state.backfill_params = BackfillParams.from_scheduler_parameters(self.conf.get("SchedulerParameters") or "")
        self.replays = envelope.ReplayGuard()
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 1000)
        self.sock.setsockopt(zmq.ROUTER_HANDOVER, 1)  # a restarted plurmd takes its routing id back
        self.sock.setsockopt(zmq.SNDHWM, 100000)
        self.sock.setsockopt(zmq.RCVHWM, 100000)
        bind_addr = "0.0.0.0" if self.conf.slurmctld_addr not in ("127.0.0.1", "localhost") else "127.0.0.1"
        self.sock.bind(f"tcp://{bind_addr}:{self.conf.slurmctld_port}")
        self.outbox: list[list[bytes]] = []
        self.running = True
        self.handlers: dict[str, Callable[[dict, Any, bytes], Any]] = {
            "submit_job": self.on_submit,
            "job_info": self.on_job_info,
            "node_info": self.on_node_info,
            "cancel_job": self.on_cancel,
            "update_job": self.on_update_job,
            "update_node": self.on_update_node,
            "step_create": self.on_step_create,
            "step_complete": self.on_step_complete,
            "job_complete": self.on_job_complete,
            "acct_query": self.on_acct_query,
            "priority_factors": self.on_priority_factors,
            "acctmgr": self.on_acctmgr,
            "share_info": self.on_share_info,
            "config": self.on_config,
            "ping": lambda header, msg, ident: {"ok": True},
            "node_register": self.on_node_register,
            "node_ping": self.on_node_ping,
            "job_ended": self.on_job_ended,
        }
        log.info("plurmctld listening on port %s, %d nodes, %d jobs restored",
                 self.conf.slurmctld_port, len(self.state.nodes), len(self.state.jobs))

    # ------------------------------------------------------------------ transport
    def reply(self, ident: bytes, header: dict, body: Any) -> None:
        payload = body if isinstance(body, bytes) else protocol.encode(body)
        self.outbox.append([ident, b""] + envelope.seal_raw(self.key, "reply", payload, header.get("id")))

    def reply_error(self, ident: bytes, parent: str | None, message: str, code: str,
                    detail: str | None = None) -> None:
        body = {"message": message, "code": code}
        if detail:
            body["detail"] = detail
        self.outbox.append([ident, b""] + envelope.seal(self.key, "error", body, parent))

    def send_node(self, out: Outgoing) -> None:
        frames = envelope.seal(self.key, out.msg_type, out.body)
        self.outbox.append([NODE_PREFIX + out.node.encode(), b""] + frames)

    def flush(self) -> None:
        if not self.outbox:
            return
        self.store.commit()  # durable before anything is acknowledged
        for frames in self.outbox:
            try:
                self.sock.send_multipart(frames, flags=zmq.NOBLOCK)
            except zmq.ZMQError as exc:  # peer gone, queue full: the peer retries
                log.debug("could not send to %r: %s", frames[0], exc)
        self.outbox.clear()

    def handle(self, frames: list[bytes]) -> None:
        if len(frames) < 2:
            return
        ident = frames[0]
        body_frames = frames[2:] if frames[1] == b"" else frames[1:]
        try:
            header, raw = envelope.open_envelope(self.key, body_frames)
            self.replays.check(header)
        except envelope.AuthError as exc:
            log.warning("dropped message from unauthenticated peer: %s", exc)
            return
        except envelope.WireError as exc:
            log.warning("bad message: %s", exc)
            self.reply_error(ident, None, str(exc), exc.code)
            return
        msg_type = header["type"]
        handler = self.handlers.get(msg_type)
        if handler is None:
            log.warning("unknown message type %r", msg_type)
            self.reply_error(ident, header.get("id"), f"unknown message type {msg_type!r}", "UnknownMessage")
            return
        try:
            msg = protocol.decode_body(msg_type, raw)
        except protocol.SchemaError as exc:
            log.warning("%s", exc)
            self.reply_error(ident, header.get("id"), str(exc), "MalformedMessage")
            return
        try:
            result = handler(header, msg, ident)
        except RequestError as exc:
            self.reply_error(ident, header.get("id"), str(exc), exc.code, exc.detail)
            return
        except Exception as exc:  # never let one request take the daemon down
            log.exception("error handling %s", msg_type)
            self.reply_error(ident, header.get("id"), f"internal error: {exc}", "InternalError")
            return
        if result is not None:
            self.reply(ident, header, result)

    def dispatch(self, items: list[Outgoing]) -> None:
        for item in items:
            self.send_node(item)

    # ------------------------------------------------------------------ loop
    def run(self) -> None:
        poller = zmq.Poller()
        poller.register(self.sock, zmq.POLLIN)
        next_tick = time.monotonic()
        while self.running:
            timeout = max(0.0, next_tick - time.monotonic())
            events = dict(poller.poll(timeout * 1000))
            if events.get(self.sock):
                for _ in range(BATCH_LIMIT):
                    try:
                        frames = self.sock.recv_multipart(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    self.handle(frames)
            # Answer first (the submissions are durable once committed), then schedule:
            # a scheduling pass never delays a reply.
            self.flush()
            try:
                if time.monotonic() >= next_tick:
                    self.dispatch(self.state.tick())
                    next_tick = time.monotonic() + TICK_S
                if self.state.need_schedule:
                    self.dispatch(self.state.schedule())
            except Exception:  # a scheduling bug must not stop the controller
                log.exception("scheduling pass failed")
                self.state.need_schedule = False
            self.flush()
        self.store.commit()

    def stop(self, *_args: Any) -> None:
        self.running = False

    # ------------------------------------------------------------------ handlers: commands
    def on_submit(self, header: dict, msg: protocol.SubmitJob, ident: bytes) -> Any:
        job, warnings = self.state.submit(msg.spec, header["uid"], header["gid"], msg.test_only)
        if msg.test_only:
            start, alloc = self.state.test_start(job)
            return {"job_id": job.job_id, "test_only": True, "start_time": start, "partition": job.partition,
                    "nodes": alloc.nodes if alloc else [], "cpus": sum(alloc.cpus) if alloc else 0,
                    "warnings": warnings}
        return {"job_id": job.job_id, "warnings": warnings}

    def on_job_info(self, header: dict, msg: protocol.JobInfoRequest, ident: bytes) -> Any:
        jobs = list(self.state.jobs.values())
        if msg.job_ids:
            wanted: dict[int, model.Job] = {}
            for spec in msg.job_ids:
                found = self.state.find_jobs(spec)
                for job in found:
                    wanted[job.job_id] = job
            if not wanted and len(msg.job_ids) == 1:
                raise RequestError("Invalid job id specified", "InvalidJobId")
            jobs = list(wanted.values())
        elif not msg.all_states:
            jobs = [j for j in jobs if j.state in model.ACTIVE_STATES or j.completing]
        if msg.states:
            states = set(msg.states)
            jobs = [j for j in jobs if j.state in states or (j.completing and "COMPLETING" in states)]
        if msg.users:
            users = set(msg.users)
            jobs = [j for j in jobs if j.spec.user in users or str(j.spec.user_id) in users]
        if msg.partitions:
            parts = set(msg.partitions)
            jobs = [j for j in jobs if j.partition in parts]
        if msg.names:
            names = set(msg.names)
            jobs = [j for j in jobs if j.spec.name in names]
        return protocol.encode({"jobs": jobs, "now": time.time(), "cluster": self.state.cluster_name})

    def on_node_info(self, header: dict, msg: protocol.NodeInfoRequest, ident: bytes) -> Any:
        nodes = []
        for node in self.state.nodes.values():
            if msg.nodes and node.name not in msg.nodes:
                continue
            record = protocol.to_builtins(node)
            record["state"] = node.state
            nodes.append(record)
        partitions = [p for p in self.state.partitions.values() if not msg.partitions or p.name in msg.partitions]
        return protocol.encode({"nodes": nodes, "partitions": partitions, "now": time.time(),
                                "cluster": self.state.cluster_name})

    def on_cancel(self, header: dict, msg: protocol.CancelJob, ident: bytes) -> Any:
        results: list[dict[str, Any]] = []
        uid = header["uid"]
        targets: list[tuple[model.Job, set[int] | None, str]] = []
        if msg.job_ids:
            for spec in msg.job_ids:
                found = self.state.find_jobs(spec)
                if not found:
                    results.append({"job": spec, "error": "Invalid job id specified", "code": "InvalidJobId"})
                    continue
                if len(found) > 1:
                    found = [j for j in found if j.state not in model.FINISHED_STATES or j.completing] or found[:1]
                task_ids = None
                if "_" in spec:
                    task_ids = parse_task_ids(spec.split("_", 1)[1])
                targets.extend((job, task_ids, spec) for job in found)
        else:
            for job in self.state.jobs.values():
                if job.state not in model.ACTIVE_STATES:
                    continue
                targets.append((job, None, str(job.job_id)))
        for job, task_ids, spec in targets:
            if msg.user is not None and msg.user not in (job.spec.user, str(job.spec.user_id)):
                continue
            if msg.names and job.spec.name not in msg.names:
                continue
            if msg.states and job.state not in msg.states:
                continue
            if msg.partitions and job.partition not in msg.partitions:
                continue
            try:
                self.dispatch(self.state.cancel(job, uid, msg.signal, msg.batch_only, task_ids, msg.full))
                results.append({"job": spec, "job_id": job.job_id})
            except RequestError as exc:
                results.append({"job": spec, "error": str(exc), "code": exc.code})
        return {"results": results}

    def on_update_job(self, header: dict, msg: protocol.UpdateJob, ident: bytes) -> Any:
        results = []
        for spec in msg.job_ids:
            found = self.state.find_jobs(spec)
            if not found:
                results.append({"job": spec, "error": "Invalid job id specified", "code": "InvalidJobId"})
                continue
            if len(found) > 1:  # a whole array: its finished tasks are left as they are
                found = [j for j in found if j.state not in model.FINISHED_STATES] or found[:1]
            for job in found:
                try:
                    self.state.update(job, msg.fields, header["uid"])
                    results.append({"job": spec, "job_id": job.job_id})
                except RequestError as exc:
                    results.append({"job": spec, "error": str(exc), "code": exc.code})
        return {"results": results}

    def on_update_node(self, header: dict, msg: protocol.UpdateNode, ident: bytes) -> Any:
        if header["uid"] not in (0, os.getuid()):
            raise RequestError("Access/permission denied", "AccessDenied")
        for name in msg.nodes:
            self.state.update_node(name, msg.state, msg.reason, header["uid"])
        return {"ok": True}

    def on_step_create(self, header: dict, msg: protocol.StepCreate, ident: bytes) -> Any:
        return self.state.step_create(msg.job_id, header["uid"], msg.name, msg.ntasks, msg.nodes_min,
                                      msg.cpus_per_task, msg.nodelist)

    def on_step_complete(self, header: dict, msg: protocol.StepComplete, ident: bytes) -> Any:
        self.state.step_complete(msg.job_id, msg.step_id, msg.exit_code, msg.exit_signal)
        return {"ok": True}

    def on_job_complete(self, header: dict, msg: protocol.JobComplete, ident: bytes) -> Any:
        self.dispatch(self.state.allocation_complete(msg.job_id, header["uid"], msg.exit_code, msg.exit_signal))
        return {"ok": True}

    def on_acct_query(self, header: dict, msg: protocol.AcctQuery, ident: bytes) -> Any:
        from plurm.corescheduler.accounting import query

        return protocol.encode(query(self.state, msg))

    def on_priority_factors(self, header: dict, msg: protocol.PriorityFactorsRequest, ident: bytes) -> Any:
        weights = getattr(self.state.priority_policy, "weights", None)
        by_factor = getattr(weights, "by_factor", None)
        reply = protocol.PriorityFactorsReply(
            type=self.conf.get("PriorityType") or "priority/basic", cluster=self.state.cluster_name,
            weights=by_factor() if by_factor else {},
            jobs=[protocol.PriorityFactorsRow(**row)
                  for row in self.state.priority_factors(time.time(), msg.job_ids, msg.users)])
        return protocol.encode(reply)

    def on_acctmgr(self, header: dict, msg: protocol.AcctMgr, ident: bytes) -> Any:
        from plurm.corescheduler.associations import AssociationError

        store = self.state.assocs
        if msg.action != "show" and header["uid"] not in (0, os.getuid()):
            raise RequestError("Access/permission denied", "AccessDenied")
        try:
            if msg.action == "add":
                for name in msg.names:
                    if msg.entity == "account":
                        store.add_account(name, msg.fields.get("parent", "root"), msg.fields.get("description"),
                                          msg.fields.get("organization"), int(msg.fields.get("fairshare", 1)))
                    elif msg.entity == "user":
                        for account in msg.fields.get("account", "").split(","):
                            if not account:
                                raise AssociationError("You need to specify an account name")
                            store.add_user(name, account, msg.fields.get("defaultaccount"),
                                           int(msg.fields.get("fairshare", 1)))
                    else:
                        store.add_qos(name, int(msg.fields.get("priority", 0)),
                                      int(msg.fields["maxjobsperuser"]) if "maxjobsperuser" in msg.fields else None,
                                      msg.fields.get("preempt", ""), msg.fields.get("preemptmode"))
            elif msg.action == "modify":
                for name in msg.names:
                    store.modify(msg.entity, name, msg.fields, msg.where.get("account"))
            elif msg.action == "delete":
                for name in msg.names:
                    store.delete(msg.entity, name)
        except (AssociationError, ValueError) as exc:
            raise RequestError(str(exc), "AssociationError") from None
        if msg.action != "show":
            self.state.recompute_priorities(time.time())
        return {"accounts": store.accounts(), "users": store.users(), "qos": store.qos(), "links": store.links(),
                "cluster": self.state.cluster_name}

    def on_share_info(self, header: dict, msg: protocol.ShareInfoRequest, ident: bytes) -> Any:
        return {"shares": [protocol.to_builtins(s) for s in self.state.assocs.shares()]}

    def on_config(self, header: dict, msg: protocol.ConfigRequest, ident: bytes) -> Any:
        return {"options": self.conf.options, "path": self.conf_path, "cluster": self.state.cluster_name}

    # ------------------------------------------------------------------ handlers: node daemons
    def _node_of(self, ident: bytes, name: str) -> str:
        if ident != NODE_PREFIX + name.encode():
            raise RequestError(f"node message for {name} from another peer", "AccessDenied")
        return name

    def on_node_register(self, header: dict, msg: protocol.NodeRegister, ident: bytes) -> Any:
        name = self._node_of(ident, msg.node)
        self.dispatch(self.state.node_register(name, protocol.to_builtins(msg)))
        log.info("node %s registered (%d running jobs)", name, len(msg.running_jobs))
        return None

    def on_node_ping(self, header: dict, msg: protocol.NodePing, ident: bytes) -> Any:
        name = self._node_of(ident, msg.node)
        self.dispatch(self.state.node_ping(name, msg.running_jobs, msg.cpu_load, msg.free_mem, msg.unhealthy))
        return None

    def on_job_ended(self, header: dict, msg: protocol.JobEnded, ident: bytes) -> Any:
        name = self._node_of(ident, msg.node)
        self.dispatch(self.state.job_ended(msg.job_id, msg.exit_code, msg.exit_signal, msg.end_time,
                                           msg.timed_out, msg.tres_usage_max, msg.tres_usage_ave))
        self.send_node(Outgoing(name, "job_ended_ack", {"job_id": msg.job_id}))
        return None
