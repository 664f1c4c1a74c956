"""The PMI server of one step on one node (``--mpi=pmi2``, Slurm's mpi/pmi2).

plurmstepd makes one socketpair per task before it starts it: the task gets its end as
``PMI_FD`` (with ``PMI_JOBID``, ``PMI_RANK``, ``PMI_SIZE``), this server keeps the other.  The
MPI library in the task asks on it who it is and where its peers are, speaking PMI-1 or PMI-2
(nodeagent/pmi_wire.py): MPICH as Debian builds it speaks PMI-1, a PMI-2 client (and Slurm's
libpmi2) the other one; the same server answers both, as 22.05's does.

What crosses nodes is the fence (PMI-1 ``barrier_in``, PMI-2 ``kvs-fence``): once every task of
this node has entered it, the server hands the node's puts since the last fence to its caller
(:class:`Fence`); plurmstepd sends them to srun, which answers every node with all nodes' puts
at once when the last node has fenced (tools/srun_pmi.py), and :meth:`NodeServer.fence_done`
releases the waiting tasks.  srun is the meeting point because it already holds a signed
channel to every plurmstepd of the step; the controller stays off a step's data path.

This module does the protocol only (sockets in, events out): no zmq, no knowledge of srun.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field

from plurm.nodeagent import pmi_wire

# What 22.05 answers to get_maxes (tests/nodeagent/reference/mpi/pmi1_mpich_rank0.txt).
KVSNAME_MAX, KEYLEN_MAX, VALLEN_MAX = 256, 64, 1024
# Bounds on what one node may hold (hostile or broken tasks): the fence carries it to srun.
MAX_KEYS = 65536


@dataclass(frozen=True)
class Fence:
    """Every task of this node is in fence ``seq``: ``kvs`` is what they put since the last."""

    seq: int
    kvs: dict[str, str]


@dataclass(frozen=True)
class Abort:
    """A task asked to end the step (MPI_Abort, or a command no PMI client sends)."""

    rank: int
    exit_code: int
    message: str


@dataclass(frozen=True)
class Complaint:
    """A line for the step's stderr and the log: slurmstepd's words for what a task did wrong."""

    rank: int
    text: str


Event = Fence | Abort | Complaint


@dataclass
class _Task:
    rank: int
    sock: socket.socket
    buffer: bytearray = field(default_factory=bytearray)
    version: int = 1  # the wire format spoken now (2 after an init asking for it)
    member: bool = True  # counted in fences until it finalizes or closes


class NodeServer:
    """The tasks of one step on this node, their node attributes, and the step's KVS."""

    def __init__(self, *, job_id: int, step_id: int, ntasks: int, tasks_per_node: list[int],
                 mapping: str = "") -> None:
        """``mapping``: PMI_process_mapping as srun computed it from the step's layout ("": ranks
        in blocks, node after node)."""
        self.jobid = f"{job_id}.{step_id}"
        self.ntasks = ntasks
        mapping = mapping or pmi_wire.process_mapping(pmi_wire.block_layout(tasks_per_node))
        self.job_attrs = {"PMI_process_mapping": mapping, "universeSize": str(ntasks)}
        self.kvs: dict[str, str] = {}  # every node's puts, as of the last fence
        self.pending: dict[str, str] = {}  # this node's puts since the last fence
        self.node_attrs: dict[str, str] = {}
        self.attr_waiters: dict[str, list[_Task]] = {}
        self.tasks: dict[int, _Task] = {}  # by the server end's descriptor
        self.child_ends: dict[int, socket.socket] = {}  # rank -> the task's end, until it started
        self.seq = 0
        self.in_fence: list[_Task] = []
        self.fence_sent = False

    # ------------------------------------------------------------------ plurmstepd's side
    def task_end(self, rank: int) -> tuple[dict[str, str], int]:
        """The variables and the descriptor for task ``rank`` (pass it to the task, then call
        :meth:`started`)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        ours.setblocking(False)
        self.tasks[ours.fileno()] = _Task(rank, ours)
        self.child_ends[rank] = theirs
        env = {"PMI_FD": str(theirs.fileno()), "PMI_JOBID": self.jobid, "PMI_RANK": str(rank),
               "PMI_SIZE": str(self.ntasks)}
        return env, theirs.fileno()

    def started(self, rank: int, ran: bool = True) -> None:
        """Task ``rank`` has its end (or never ran): ours is closed, so its exit reads as EOF."""
        end = self.child_ends.pop(rank, None)
        if end is not None:
            end.close()
        if not ran:
            for fd, task in list(self.tasks.items()):
                if task.rank == rank:
                    self._drop(fd)

    def fds(self) -> list[int]:
        return list(self.tasks)

    def open(self) -> bool:
        """Whether a task still holds its connection (plurmstepd keeps serving until none does)."""
        return bool(self.tasks)

    def readable(self, fd: int) -> list[Event]:
        """Read what task ``fd`` sent and answer it; the events for plurmstepd."""
        task = self.tasks.get(fd)
        if task is None:
            return []
        try:
            data = task.sock.recv(65536)
        except BlockingIOError:
            return []
        except OSError:
            data = b""
        events: list[Event] = []
        if not data:  # the task ended (or closed PMI_FD): it no longer holds fences up
            self._drop(fd)
            return self._maybe_fence(events)
        task.buffer += data
        while fd in self.tasks:
            try:
                command = pmi_wire.take_v2(task.buffer) if task.version == 2 else pmi_wire.take_v1(task.buffer)
            except pmi_wire.WireError as exc:
                events.append(Complaint(task.rank, f"mpi/pmi2: task {task.rank}: {exc}: closing its PMI connection"))
                self._drop(fd)
                break
            if command is None:
                break
            events.extend(self._command(task, command))
        return self._maybe_fence(events)

    def fence_done(self, seq: int, kvs: dict[str, str]) -> None:
        """srun's answer to fence ``seq``: every node's puts; the waiting tasks go on."""
        if seq != self.seq or not self.fence_sent:
            return  # (a stale or repeated answer: already applied)
        for key, value in kvs.items():
            if len(self.kvs) < MAX_KEYS or key in self.kvs:
                self.kvs[key] = value
        waiting, self.in_fence = self.in_fence, []
        self.seq += 1
        self.fence_sent = False
        for task in waiting:
            self._reply(task, "barrier_out" if task.version == 1 else "kvs-fence-response", ("rc", 0))

    def close(self) -> None:
        for fd in list(self.tasks):
            self._drop(fd)
        for end in self.child_ends.values():
            end.close()
        self.child_ends.clear()

    # ------------------------------------------------------------------ the protocol
    def _command(self, task: _Task, command: pmi_wire.Command) -> list[Event]:
        name = command.get("cmd") or command.get("mcmd", "")
        if name == "init":
            return self._init(task, command)
        handler = (_V2 if task.version == 2 else _V1).get(name)
        if handler is None:
            # 22.05 ends the step on a command it does not know (tests/nodeagent/reference/mpi/README).
            wire = "pmi2" if task.version == 2 else "pmi1"
            return [Complaint(task.rank, f"mpi/pmi2: invalid {wire} command received: '{name}'"),
                    Abort(task.rank, 1, "")]
        return handler(self, task, command) or []

    def _init(self, task: _Task, command: pmi_wire.Command) -> list[Event]:
        version, sub = command.get("pmi_version", ""), command.get("pmi_subversion", "")
        if version == "2":
            self._reply(task, "response_to_init", ("rc", 0), ("pmi_version", 2), ("pmi_subversion", 0))
            task.version = 2  # (the answer still goes in PMI-1 form; what follows in PMI-2's)
        elif version == "1":
            self._reply(task, "response_to_init", ("rc", 0), ("pmi_version", 1), ("pmi_subversion", 1))
        else:
            self._reply(task, "response_to_init", ("rc", -1), ("pmi_version", 1), ("pmi_subversion", 1))
            return [Complaint(task.rank, f"mpi/pmi2: unsupported PMI version {version}.{sub}")]
        return []

    def _reply(self, task: _Task, cmd: str, *pairs: tuple[str, str | int]) -> None:
        data = pmi_wire.format_v1(cmd, *pairs) if task.version == 1 or cmd == "response_to_init" \
            else pmi_wire.format_v2(cmd, *pairs)
        fd = task.sock.fileno()
        try:
            # A reply is small and the task waits for it: a task that stops reading its answers
            # holds this loop up 5 seconds at most, then loses its connection.
            task.sock.settimeout(5.0)
            task.sock.sendall(data)
            task.sock.setblocking(False)
        except OSError:
            self._drop(fd)

    def _put(self, task: _Task, key: str, value: str) -> str | None:
        """Keep a put for the next fence; why not, when it breaks a bound."""
        if not key or len(key) > KEYLEN_MAX or len(value) > VALLEN_MAX:
            return f"key or value too long (at most {KEYLEN_MAX} and {VALLEN_MAX} characters)"
        if len(self.pending) >= MAX_KEYS and key not in self.pending:
            return f"more than {MAX_KEYS} keys"
        self.pending[key] = value
        return None

    def _enter_fence(self, task: _Task) -> None:
        if task not in self.in_fence:
            self.in_fence.append(task)

    def _maybe_fence(self, events: list[Event]) -> list[Event]:
        members = [t for t in self.tasks.values() if t.member]
        if self.in_fence and not self.fence_sent and all(t in self.in_fence for t in members):
            self.fence_sent = True
            events.append(Fence(self.seq, dict(self.pending)))
            self.pending.clear()
        return events

    def _drop(self, fd: int) -> None:
        task = self.tasks.pop(fd, None)
        if task is None:
            return
        task.member = False
        if task in self.in_fence and not self.fence_sent:
            self.in_fence.remove(task)
        for waiters in self.attr_waiters.values():
            if task in waiters:
                waiters.remove(task)
        try:
            task.sock.close()
        except OSError:
            pass

    # PMI-1 (Flux RFC 13 names these; the answers are 22.05's, see the reference captures)
    def _v1_maxes(self, task: _Task, c: pmi_wire.Command) -> None:
        self._reply(task, "maxes", ("rc", 0), ("kvsname_max", KVSNAME_MAX), ("keylen_max", KEYLEN_MAX),
                    ("vallen_max", VALLEN_MAX))

    def _v1_appnum(self, task: _Task, c: pmi_wire.Command) -> None:
        self._reply(task, "appnum", ("rc", 0), ("appnum", -1))

    def _v1_kvsname(self, task: _Task, c: pmi_wire.Command) -> None:
        self._reply(task, "my_kvsname", ("rc", 0), ("kvsname", self.jobid))

    def _v1_universe(self, task: _Task, c: pmi_wire.Command) -> None:
        self._reply(task, "universe_size", ("rc", 0), ("size", self.ntasks))

    def _v1_get(self, task: _Task, c: pmi_wire.Command) -> None:
        key = c.get("key", "")
        value = self.kvs.get(key, self.job_attrs.get(key))
        if value is None:
            self._reply(task, "get_result", ("rc", -1), ("msg", "key_not_found"))
        else:
            self._reply(task, "get_result", ("rc", 0), ("value", value))

    def _v1_put(self, task: _Task, c: pmi_wire.Command) -> list[Event]:
        why = self._put(task, c.get("key", ""), c.get("value", ""))
        if why is None:
            self._reply(task, "put_result", ("rc", 0))
            return []
        self._reply(task, "put_result", ("rc", -1), ("msg", why.replace(" ", "_")))  # (PMI-1 values have no spaces)
        return [Complaint(task.rank, f"mpi/pmi2: task {task.rank}: put refused: {why}")]

    def _v1_barrier(self, task: _Task, c: pmi_wire.Command) -> None:
        self._enter_fence(task)

    def _v1_finalize(self, task: _Task, c: pmi_wire.Command) -> None:
        self._reply(task, "finalize_ack", ("rc", 0))
        task.member = False

    def _v1_abort(self, task: _Task, c: pmi_wire.Command) -> list[Event]:
        code = c.get("exitcode", "1")
        return [Abort(task.rank, int(code) if code.lstrip("-").isdigit() else 1, "")]

    # PMI-2 (the commands of MPICH's src/pmi/maint/pmi-2.0.txt)
    def _v2_fullinit(self, task: _Task, c: pmi_wire.Command) -> list[Event]:
        # 22.05 answers rc=3 when pmijobid is missing (and says so), the rest as usual.
        rc = 0 if "pmijobid" in c else 3
        self._reply(task, "fullinit-response", ("rc", rc), ("pmi-version", 2), ("pmi-subversion", 0),
                    ("rank", task.rank), ("size", self.ntasks), ("appnum", -1), ("debugged", "FALSE"),
                    ("pmiverbose", "FALSE"))
        return [] if rc == 0 else [Complaint(task.rank, "pmijobid missing in fullinit command")]

    def _v2_getid(self, task: _Task, c: pmi_wire.Command) -> None:
        self._reply(task, "job-getid-response", ("rc", 0), ("jobid", self.jobid))

    def _v2_jobattr(self, task: _Task, c: pmi_wire.Command) -> None:
        value = self.job_attrs.get(c.get("key", ""))
        if value is None:
            self._reply(task, "info-getjobattr-response", ("rc", 0), ("found", "FALSE"))
        else:
            self._reply(task, "info-getjobattr-response", ("rc", 0), ("found", "TRUE"), ("value", value))

    def _v2_putnodeattr(self, task: _Task, c: pmi_wire.Command) -> None:
        key, value = c.get("key", ""), c.get("value", "")
        if not key or len(key) > KEYLEN_MAX or len(value) > VALLEN_MAX or len(self.node_attrs) >= MAX_KEYS:
            self._reply(task, "info-putnodeattr-response", ("rc", -1))
            return
        self.node_attrs[key] = value
        self._reply(task, "info-putnodeattr-response", ("rc", 0))
        for waiter in self.attr_waiters.pop(key, []):
            self._reply(waiter, "info-getnodeattr-response", ("rc", 0), ("found", "TRUE"), ("value", value))

    def _v2_getnodeattr(self, task: _Task, c: pmi_wire.Command) -> None:
        key = c.get("key", "")
        if key in self.node_attrs:
            self._reply(task, "info-getnodeattr-response", ("rc", 0), ("found", "TRUE"),
                        ("value", self.node_attrs[key]))
        elif c.get("wait", "FALSE").upper() == "TRUE":
            self.attr_waiters.setdefault(key, []).append(task)  # answered by the put
        else:
            self._reply(task, "info-getnodeattr-response", ("rc", 0), ("found", "FALSE"))

    def _v2_put(self, task: _Task, c: pmi_wire.Command) -> list[Event]:
        why = self._put(task, c.get("key", ""), c.get("value", ""))
        self._reply(task, "kvs-put-response", ("rc", 0 if why is None else -1))
        return [Complaint(task.rank, f"mpi/pmi2: task {task.rank}: put refused: {why}")] if why else []

    def _v2_get(self, task: _Task, c: pmi_wire.Command) -> None:
        value = self.kvs.get(c.get("key", ""))
        if value is None:
            self._reply(task, "kvs-get-response", ("rc", 0), ("found", "FALSE"))
        else:
            self._reply(task, "kvs-get-response", ("rc", 0), ("found", "TRUE"), ("value", value))

    def _v2_finalize(self, task: _Task, c: pmi_wire.Command) -> None:
        self._reply(task, "finalize-response", ("rc", 0))
        task.member = False

    def _v2_abort(self, task: _Task, c: pmi_wire.Command) -> list[Event]:
        return [Abort(task.rank, 1, c.get("msg", c.get("message", "")))]


_V1 = {"get_maxes": NodeServer._v1_maxes, "get_appnum": NodeServer._v1_appnum,
       "get_my_kvsname": NodeServer._v1_kvsname, "get_universe_size": NodeServer._v1_universe,
       "get": NodeServer._v1_get, "put": NodeServer._v1_put, "barrier_in": NodeServer._v1_barrier,
       "finalize": NodeServer._v1_finalize, "abort": NodeServer._v1_abort}
_V2 = {"fullinit": NodeServer._v2_fullinit, "job-getid": NodeServer._v2_getid,
       "info-getjobattr": NodeServer._v2_jobattr, "info-putnodeattr": NodeServer._v2_putnodeattr,
       "info-getnodeattr": NodeServer._v2_getnodeattr, "kvs-put": NodeServer._v2_put,
       "kvs-get": NodeServer._v2_get, "kvs-fence": NodeServer._v1_barrier, "finalize": NodeServer._v2_finalize,
       "abort": NodeServer._v2_abort}
