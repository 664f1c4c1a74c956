"""Node administration: ``scontrol update NodeName=... State=...``, ``reboot``, ``cancel_reboot``.

A mixin of ``ClusterCore`` (corescheduler/core.py), pure as the rest of the core.  What it
does, after Slurm 22.05's slurmctld (the node_mgr.c behaviour as documented and observed):

- **DRAIN** takes no new jobs; the node's jobs run to their end (sinfo ``drng`` while they
  run, ``drain`` after: the base state comes from the allocations, the flag from here).
- **DOWN** ends the node's jobs as a node failure does (requeued when they may be, else
  NODE_FAIL), and the node and their other nodes are told to kill them.  **RESUME** clears DOWN, DRAIN and the reason, and is refused ("Invalid node
  state specified") for a node that is neither.  **IDLE** does the same without refusing;
  **UNDRAIN** clears the drain only.  Both DRAIN and DOWN need a reason.
- **reboot**: the node is marked REBOOT_REQUESTED; ``ASAP`` drains it too (reason "Reboot
  ASAP" unless one is given).  Once the node is idle the core asks its plurmd to reboot
  (``reboot_node``) and marks it REBOOT_ISSUED: no job starts on it until it registers
  again with a later start time, when it takes ``NextState`` (default: back in service);
  while its plurmd still answers, the word is sent again every 5 s (lost, or refused by a
  plurmd that still had a job's end to report).
  A node not back within ResumeTimeout (60 s by default) is set DOWN ("reboot timed out").
- **CANCEL_REBOOT** withdraws a request that has not been issued yet (and the ASAP drain).
- Where the nodes cannot reboot (no RebootProgram, and not a local cluster's: core_reboot.py)
  it is refused as 22.05 refuses it ("RebootProgram isn't defined").
- A ``--reboot`` job's nodes reboot too (issued, with ``reboot_job``): core_reboot.py says how.

What an administrator set survives a controller restart or a takeover, as slurmctld's node
state file: ``take_node_admin`` gives the nodes' DOWN/DRAIN flags, reasons and reboots as
JSON when they changed (the controller keeps it in the store's meta table), and
``restore_node_admin`` puts it back on the nodes of a new core.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from plurm.corescheduler.effects import Outgoing
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.identity import Identity
from plurm.wire import model
from plurm.wire.model import Job, Node

log = logging.getLogger("plurmctld")

INVALID_NODE = ("Invalid node name specified", "InvalidNode")
INVALID_STATE = ("Invalid node state specified", "InvalidNodeState")
REBOOT_IN_PROGRESS = ("Reboot already in progress", "RebootInProgress")
REASON_NEEDED = ("You must specify a reason when DOWNING or DRAINING a node", "ReasonRequired")
REBOOT_ASAP = "Reboot ASAP"
# 22.05 without RebootProgram (tests/integration/reference/reboot/anchor_no_reboot_program.txt)
NO_REBOOT_PROGRAM = ("Unspecified error", "NoRebootProgram", "RebootProgram isn't defined")
REBOOT_RESEND_S = 5.0  # an issued reboot not done yet is asked again this often (a lost or refused word)
NEXT_STATES = ("", "RESUME", "DOWN", "UNDRAIN")
# The State= values the controller acts on (scontrol sends them upper-cased, unabbreviated).
STATES = ("DRAIN", "DOWN", "RESUME", "IDLE", "UNDRAIN", "CANCEL_REBOOT")
# What survives a restart, with the types a saved record must have (it is read back as data).
SAVED_FIELDS: dict[str, tuple[type, ...]] = {
    "down": (bool,), "drain": (bool,), "reason": (str, type(None)), "reason_time": (float, int, type(None)),
    "reason_user": (str, type(None)), "reboot": (str,), "reboot_next": (str,),
    "reboot_time": (float, int, type(None)), "reboot_drained": (bool,), "reboot_job": (bool,),
    "comment": (str, type(None))}
OPTIONAL_FIELDS = {"reboot_job": False, "comment": None}  # (newer than some saved states: their default)


class NodeAdmin:
    node_admin_dirty: bool = True  # something may have changed what take_node_admin gives
    _node_admin_saved: str | None = None  # what it gave last
    # ResumeTimeout counts from here too: a core restored with reboots issued gives their
    # nodes a whole ResumeTimeout to register (the reboot may have ended while it was down).
    _reboots_restored_at: float = 0.0
    _reboot_sent: dict[str, float] | None = None  # node -> when reboot_node was last sent

    if TYPE_CHECKING:  # provided by ClusterCore
        jobs: dict[int, Job]
        nodes: dict[str, Node]
        settings: Any
        need_schedule: bool
        reboot_pending: set[str]
        now: float

        def _at(self, now: float) -> None: ...
        def job_reboot_due(self, node: Node, now: float) -> list[Outgoing]: ...
        def nodes_can_reboot(self, names: list[str]) -> bool: ...
        def job_reboot_registered(self, node: Node, rebooted: bool) -> list[Outgoing]: ...
        def terminate_body(self, job: Job) -> dict[str, Any]: ...
        def _end_failed_run(self, job: Job, failed: str, now: float) -> list[Outgoing]: ...
        def _finish(self, job: Job, state: str, end: float, exit_code: int = 0,
                    exit_signal: int = 0) -> list[Outgoing]: ...

    # ------------------------------------------------------------------ scontrol update
    def update_nodes(self, names: list[str], state: str | None, reason: str | None, who: Identity,
                     now: float, comment: str | None = None) -> list[Outgoing]:
        """``scontrol update NodeName=<names> [State=...] [Reason=...]``.  An unknown name
        refuses the whole request (slurmctld changes the nodes before it: here nothing is
        half done).  A node whose state refuses the change (RESUME of a node in service,
        CANCEL_REBOOT without a reboot pending) is left as it is, the others are changed, and
        the request answers that refusal."""
        self._at(now)
        upper = (state or "").upper()
        if upper and upper not in STATES:
            raise RequestError(*INVALID_STATE)
        if upper in ("DRAIN", "DOWN") and not reason:
            raise RequestError(*REASON_NEEDED)
        unknown = [name for name in names if name not in self.nodes]
        if unknown:
            log.info("update_node: node %s does not exist", unknown[0])
            raise RequestError(*INVALID_NODE)
        refusal: RequestError | None = None
        for name in names:
            if comment is not None:  # Comment= ("" clears it)
                self.nodes[name].comment = comment or None
            try:
                self._update_one(self.nodes[name], upper, reason, who, now)
            except RequestError as exc:  # (RESUME and CANCEL_REBOOT only: they send nothing)
                refusal = refusal or exc
        self.need_schedule = True
        self.node_admin_dirty = True
        out = self._end_jobs_of_down_nodes(set(names), now) if upper == "DOWN" else []
        if refusal is not None:
            raise refusal
        return out

    def _update_one(self, node: Node, state: str, reason: str | None, who: Identity, now: float) -> None:
        if state == "DRAIN":
            node.drain = True
            node.reboot_drained = False  # an administrator's drain now, not the reboot's
        elif state == "DOWN":
            node.down = True
        elif state == "RESUME":
            if not (node.down or node.drain or not node.responding and node.boot_time is not None):
                log.info("update_node: node %s is not down or drained: RESUME refused", node.name)
                raise RequestError(*INVALID_STATE)
            self._back_in_service(node)
        elif state == "IDLE":
            self._back_in_service(node)
        elif state == "UNDRAIN":
            node.drain = node.reboot_drained = False
            if not node.down:
                node.reason = None
        elif state == "CANCEL_REBOOT":
            self._cancel_reboot(node)
        if reason is not None and (node.drain or node.down):
            self._set_reason(node, reason, who.user, now)
        log.info("update_node: node %s state %s%s", node.name, node.state,
                 f" reason {node.reason!r}" if node.reason else "")

    @staticmethod
    def _set_reason(node: Node, reason: str, user: str, now: float) -> None:
        node.reason = reason
        node.reason_time = now
        node.reason_user = user

    @staticmethod
    def _back_in_service(node: Node) -> None:
        node.down = node.drain = node.reboot_drained = False
        node.reason = node.reason_time = node.reason_user = None

    def _end_jobs_of_down_nodes(self, down: set[str], now: float) -> list[Outgoing]:
        """Nodes set DOWN: their jobs' current runs have failed with them, as when a node stops
        responding (core_nodes.py ``_end_failed_run``: a batch job that may be requeued goes
        back to the queue, any other ends NODE_FAIL, its other nodes kill the run); unlike a
        silent node a node set DOWN may be alive, so it is told to kill that run too."""
        out: list[Outgoing] = []
        for job in list(self.jobs.values()):
            if not (job.state in (model.RUNNING, model.SUSPENDED) or job.completing):
                continue
            failed = [n for n in job.nodes if n in down]
            if not failed:
                continue
            log.warning("job %s: node %s set DOWN by an administrator", job.job_id, ",".join(failed))
            body = dict(self.terminate_body(job), restarts=job.restarts)
            out.extend(self._end_failed_run(job, failed[0], now))
            out.extend(Outgoing(n, "terminate_job", body) for n in failed)
        return out

    # ------------------------------------------------------------------ reboot
    def reboot_nodes(self, names: list[str], asap: bool, next_state: str, reason: str | None, who: Identity,
                     now: float) -> list[Outgoing]:
        """``scontrol reboot [ASAP] [NextState=...] [Reason=...] <nodes|ALL>`` (empty: ALL)."""
        self._at(now)
        next_state = (next_state or "").upper()
        if next_state not in NEXT_STATES:
            raise RequestError(*INVALID_STATE)
        targets = []
        for name in names or list(self.nodes):
            node = self.nodes.get(name)
            if node is None:
                raise RequestError(*INVALID_NODE)
            targets.append(node)
        if not self.nodes_can_reboot([node.name for node in targets]):  # (core_reboot.py)
            log.info("reboot of %s refused: no RebootProgram", ",".join(n.name for n in targets))
            raise RequestError(*NO_REBOOT_PROGRAM)
        for node in targets:
            if node.reboot == "issued":
                continue  # (it is rebooting: the request is done already)
            node.reboot = "requested"
            node.reboot_next = next_state
            if asap and not node.drain:
                node.drain = node.reboot_drained = True
                self._set_reason(node, reason or REBOOT_ASAP, who.user, now)
            elif reason:
                self._set_reason(node, reason, who.user, now)
            self.reboot_pending.add(node.name)
            log.info("reboot requested for node %s%s%s", node.name, " (ASAP)" if asap else "",
                     f", then {next_state}" if next_state else "")
        self.need_schedule = True
        return self.reboots_due(now)

    def _cancel_reboot(self, node: Node) -> None:
        if node.reboot == "issued":
            raise RequestError(*REBOOT_IN_PROGRESS)
        if node.reboot != "requested":
            log.info("cancel_reboot: node %s has no reboot pending", node.name)
            raise RequestError(*INVALID_STATE)
        node.reboot, node.reboot_next = "", ""
        self.reboot_pending.discard(node.name)
        if node.reboot_drained:
            node.drain = node.reboot_drained = False
            if node.reason == REBOOT_ASAP and not node.down:
                node.reason = node.reason_time = node.reason_user = None

    def reboots_due(self, now: float) -> list[Outgoing]:
        """Issue the reboots of nodes that are idle now; a reboot not done within
        ResumeTimeout puts its node DOWN.  Walks only the nodes with a reboot pending."""
        self.node_admin_dirty = True  # (every tick: drains and downs the rest of the core sets too)
        if not self.reboot_pending:
            return []
        out: list[Outgoing] = []
        busy = self._busy_nodes()
        timeout = getattr(self.settings, "resume_timeout", 60.0)
        if self._reboot_sent is None:
            self._reboot_sent = {}
        for name in sorted(self.reboot_pending):
            node = self.nodes.get(name)
            if node is None:
                self.reboot_pending.discard(name)
                continue
            if node.reboot == "issued" and node.reboot_job:  # (a --reboot job's: core_reboot.py)
                out.extend(self.job_reboot_due(node, now))
            elif node.reboot == "requested" and node.responding and name not in busy:
                node.reboot, node.reboot_time = "issued", now
                log.info("node %s is idle: reboot issued", name)
                out.append(self._reboot_word(name, now))
            elif (node.reboot == "issued" and node.reboot_time is not None
                  and now - max(node.reboot_time, self._reboots_restored_at) > timeout):
                log.warning("node %s did not come back within ResumeTimeout (%.0f s): DOWN", name, timeout)
                node.reboot, node.reboot_next, node.reboot_drained = "", "", False
                node.down = True
                self._set_reason(node, "reboot timed out", self.settings.slurm_user, now)
                self.reboot_pending.discard(name)
            elif (node.reboot == "issued" and node.responding and name not in busy
                  and now - self._reboot_sent.get(name, 0.0) >= REBOOT_RESEND_S):
                out.append(self._reboot_word(name, now))  # its plurmd still answers: not rebooting yet
        return out

    def _reboot_word(self, name: str, now: float) -> Outgoing:
        if self._reboot_sent is None:
            self._reboot_sent = {}
        self._reboot_sent[name] = now
        return Outgoing(name, "reboot_node", {"reason": self.nodes[name].reason or ""})

    def _busy_nodes(self) -> set[str]:
        busy: set[str] = set()
        for job in self.jobs.values():
            if job.state in (model.RUNNING, model.SUSPENDED) or job.completing:
                busy.update(job.nodes)
        return busy

    def reboot_registered(self, name: str, boot_time: float | None, start_time: float | None) -> list[Outgoing]:
        """A node registered: if it was told to reboot and has started since, the reboot is
        done and the node takes its NextState.  If it has not (the same daemon registering
        again, to a restarted controller that may never have sent the word), it is told again."""
        node = self.nodes.get(name)
        if node is None or node.reboot != "issued" or node.reboot_time is None:
            return []
        rebooted = max(boot_time or 0.0, start_time or 0.0) > node.reboot_time
        if node.reboot_job:  # (a --reboot job's: core_reboot.py)
            return self.job_reboot_registered(node, rebooted)
        if not rebooted:
            log.info("node %s registered without having rebooted: reboot issued again", name)
            return [self._reboot_word(name, self.now)]
        next_state, drained = node.reboot_next, node.reboot_drained
        node.reboot, node.reboot_next, node.reboot_time, node.reboot_drained = "", "", None, False
        self.reboot_pending.discard(name)
        if next_state == "DOWN":
            node.down = True
            node.reason = node.reason or "reboot complete: NextState=DOWN"
        elif next_state == "UNDRAIN":
            node.drain = False
            if not node.down:
                node.reason = None
        elif next_state == "RESUME" or drained:
            self._back_in_service(node)
        log.info("node %s rebooted: state %s", name, node.state)
        self.need_schedule = True
        return []

    # ------------------------------------------------------------------ across restarts
    def take_node_admin(self) -> str | None:
        """The nodes' saved state (JSON) if it changed since the last call, else None."""
        if not self.node_admin_dirty:
            return None
        self.node_admin_dirty = False
        text = json.dumps({name: {f: getattr(node, f) for f in SAVED_FIELDS} for name, node in self.nodes.items()
                           if node.down or node.drain or node.reboot or node.reason or node.comment}, sort_keys=True)
        if text == self._node_admin_saved:
            return None
        self._node_admin_saved = text
        return text

    def restore_node_admin(self, text: str | None, now: float) -> None:
        """Put back what ``take_node_admin`` gave (a node no longer in slurm.conf, or a record
        that does not have the right shape, is logged and left out)."""
        if not text:
            return
        self._reboots_restored_at = now
        try:
            saved = json.loads(text)
        except ValueError as exc:
            log.error("saved node state unreadable, not restored: %s", exc)
            return
        if not isinstance(saved, dict):
            log.error("saved node state is not a table of nodes, not restored")
            return
        for name, record in saved.items():
            node = self.nodes.get(name)
            if node is None:
                log.warning("saved state of node %s: no longer in slurm.conf", name)
                continue
            if isinstance(record, dict):
                record = {**OPTIONAL_FIELDS, **record}
            if (not isinstance(record, dict) or set(record) != set(SAVED_FIELDS)
                    or any(not isinstance(record[f], kinds) or isinstance(record[f], bool) and bool not in kinds
                           for f, kinds in SAVED_FIELDS.items())
                    or record["reboot"] not in ("", "requested", "issued") or record["reboot_next"] not in NEXT_STATES):
                log.error("saved state of node %s has the wrong shape, not restored: %r", name, record)
                continue
            for field, value in record.items():
                setattr(node, field, float(value) if isinstance(value, int) and field.endswith("_time") else value)
            if node.reboot:
                self.reboot_pending.add(name)
        self._node_admin_saved = text
        self.node_admin_dirty = False
        self.need_schedule = True
