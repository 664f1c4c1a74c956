"""The PMIx server of one step on one node (``--mpi=pmix``, Slurm's mpi/pmix), over the host's libpmix.

What Slurm's mpi/pmix plugin does in slurmstepd, plurmstepd does here: ``PMIx_server_init`` with a
module of callbacks, ``PMIx_server_register_nspace`` with the step's job-level facts (sizes, the
node and process maps, each rank's local and node rank and host), ``PMIx_server_register_client``
for each task of this node, and ``PMIx_server_setup_fork`` for each task's environment (the
server's URI and the task's namespace and rank: Open MPI's PMIx client connects with them).

The library runs its own progress thread and calls the module from it.  The callbacks only take
note (a queue, and a byte on a pipe plurmstepd's poller watches): a fence's local blob goes to
srun from plurmstepd's loop, which alone may use its channel.  srun answers with every node's
blob (tools/srun_pmi.py); :meth:`NodeServer.fence_done` hands their concatenation to the
library's callback -- PMIx's modex data is a packed buffer, so the nodes' parts simply follow
one another, as Slurm's collective joins them.

Everything the library may still touch is kept here until :meth:`NodeServer.close`: the module
and its ctypes callbacks, the info arrays, the fence buffers until the library releases them.
"""

from __future__ import annotations

import ctypes
import os
import queue
import shutil
import sys
import tempfile
import threading
from dataclasses import dataclass
from typing import Any

from plurm.nodeagent import pmix_lib as px

# How long a registration may take the library before the step is given up (its progress thread
# answers in milliseconds; a wedged library must not hold the step forever).
REGISTER_TIMEOUT_S = 30.0


class PmixError(RuntimeError):
    """The PMIx layer failed: the words say which call, with which status."""


@dataclass(frozen=True)
class Fence:
    """Every task of this node is in fence ``seq``: ``data`` is their packed contribution."""

    seq: int
    data: bytes


@dataclass(frozen=True)
class Abort:
    """A task called PMIx_Abort (Open MPI's MPI_Abort)."""

    rank: int
    status: int
    message: str


Event = Fence | Abort


def node_of_rank(tasks_per_node: list[int], node_id: int, task_ids: list[int],
                 mapping: list[int] | None = None) -> list[int]:
    """Which node each rank of the step runs on: ``mapping`` when srun sent it, else blocks node
    after node (srun's default layout) -- unless that contradicts this node's own ranks, which
    are then the only ranks known placed (the others keep their block places)."""
    if mapping:
        return list(mapping)
    blocks = [node for node, count in enumerate(tasks_per_node) for _ in range(count)]
    for rank in task_ids:
        if 0 <= rank < len(blocks):
            blocks[rank] = node_id
    return blocks


class NodeServer:
    """One step's PMIx namespace, served to this node's tasks."""

    def __init__(self, *, job_id: int, step_id: int, node_id: int, nodelist: list[str], ntasks: int,
                 node_of: list[int], uid: int, gid: int) -> None:
        self.job_id, self.step_id, self.node_id = job_id, step_id, node_id
        self.nspace = f"slurm.pmix.{job_id}.{step_id}"  # (22.05's name: programs may read it)
        self.nodelist = list(nodelist)
        self.ntasks = ntasks
        self.node_of = list(node_of)
        self.local = [rank for rank, node in enumerate(self.node_of) if node == node_id]
        self.uid, self.gid = uid, gid
        self.events: queue.SimpleQueue[Event] = queue.SimpleQueue()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        self.keep: list[Any] = []  # what the library points into, for the step's life
        self.buffers: dict[int, Any] = {}  # fence results until the library releases them
        self.fences: dict[int, tuple[Any, int]] = {}  # seq -> (the library's callback, its cbdata)
        self.lock = threading.Lock()
        self.seq = 0
        # Ranks that connected, and that finalized (set from the progress thread, read by plurmstepd).
        self.connected: set[int] = set()
        self.finalized: set[int] = set()
        self.tmpdir = ""
        self.lib: Any = None
        self.initialized = False

    # ------------------------------------------------------------------ setting up
    def start(self) -> None:
        """Init the library, register the step's namespace and this node's tasks (PmixError)."""
        try:
            self.lib = px.load()
        except px.LibraryMissing as exc:
            raise PmixError(f"mpi/pmix: {exc}") from exc
        # The server's socket lives in a directory of the step's own, which only the tasks'
        # owner may enter: the library's rendezvous files are nobody else's business.
        self.tmpdir = tempfile.mkdtemp(prefix=f"plurm-pmix.{self.job_id}.{self.step_id}.{self.node_id}.")
        try:
            if os.geteuid() == 0:
                os.chown(self.tmpdir, self.uid, self.gid)
        except OSError as exc:
            raise PmixError(f"mpi/pmix: cannot hand {self.tmpdir} to uid {self.uid}: {exc}") from exc
        # (The library's own choices stand -- its shared-memory data store ds21 lives in tmpdir --
        # as in 22.05's slurmstepd; PMIX_MCA_gds=hash in plurmd's environment overrides them.)
        self._init()
        self._register_nspace()
        for rank in self.local:
            self._call_and_wait("PMIx_server_register_client",
                                lambda cb, rank=rank: self.lib.PMIx_server_register_client(
                                    ctypes.byref(px.proc(self.nspace, rank)), self.uid, self.gid, None, cb, None))

    def _init(self) -> None:
        module = px.PmixServerModule()
        module.client_connected = px.ClientConnectedFn(self._client_connected)
        module.client_finalized = px.ClientFinalizedFn(self._client_finalized)
        module.abort = px.AbortFn(self._abort)
        module.fence_nb = px.FenceNbFn(self._fence_nb)
        module.direct_modex = px.DmodexFn(self._direct_modex)
        self.keep.append(module)
        info = px.InfoArray([
            ("pmix.srvr.tmpdir", px.PMIX_STRING, self.tmpdir),  # PMIX_SERVER_TMPDIR
            ("pmix.sys.tmpdir", px.PMIX_STRING, self.tmpdir),  # PMIX_SYSTEM_TMPDIR
            ("pmix.srv.nspace", px.PMIX_STRING, f"plurm.stepd.{self.job_id}.{self.step_id}"),  # PMIX_SERVER_NSPACE
            ("pmix.srv.rank", px.PMIX_PROC_RANK, self.node_id),  # PMIX_SERVER_RANK
            # PMIX_USERID, PMIX_GRPID: the owner of the rendezvous and shared-memory files (the
            # tasks', who must open the data store's locks; 22.05 passes the job's uid too)
            ("pmix.euid", px.PMIX_UINT32, self.uid),
            ("pmix.egid", px.PMIX_UINT32, self.gid),
        ])
        self.keep.append(info)
        status = self.lib.PMIx_server_init(ctypes.byref(module), info.pointer, info.count)
        if status != px.PMIX_SUCCESS:
            raise PmixError(f"mpi/pmix: PMIx_server_init failed: {px.error_string(status)}")
        self.initialized = True

    def _register_nspace(self) -> None:
        lib = self.lib
        hosts = ",".join(self.nodelist)
        ppn = ";".join(",".join(str(r) for r, n in enumerate(self.node_of) if n == node)
                       for node in range(len(self.nodelist)))
        node_map, proc_map = ctypes.c_void_p(), ctypes.c_void_p()
        for name, func, text, out in (("PMIx_generate_regex", lib.PMIx_generate_regex, hosts, node_map),
                                      ("PMIx_generate_ppn", lib.PMIx_generate_ppn, ppn, proc_map)):
            status = func(text.encode(), ctypes.byref(out))
            if status != px.PMIX_SUCCESS:
                raise PmixError(f"mpi/pmix: {name} failed: {px.error_string(status)}")
        node_map_text, proc_map_text = ctypes.string_at(node_map.value), ctypes.string_at(proc_map.value)
        self.keep.extend([node_map, proc_map])  # (the library's allocation; small, freed at exit)
        node_rank: dict[int, int] = {}
        procs: list[tuple[str, int, Any]] = []
        counts = [0] * len(self.nodelist)
        for rank, node in enumerate(self.node_of):
            node_rank[rank] = counts[node]
            counts[node] += 1
            procs.append(("pmix.pdata", px.PMIX_DATA_ARRAY, [  # PMIX_PROC_DATA: the rank first
                ("pmix.rank", px.PMIX_PROC_RANK, rank),
                ("pmix.appnum", px.PMIX_UINT32, 0),
                ("pmix.apprank", px.PMIX_PROC_RANK, rank),
                ("pmix.grank", px.PMIX_PROC_RANK, rank),
                ("pmix.lrank", px.PMIX_UINT16, node_rank[rank]),
                ("pmix.nrank", px.PMIX_UINT16, node_rank[rank]),
                ("pmix.nodeid", px.PMIX_UINT32, node),
                ("pmix.hname", px.PMIX_STRING, self.nodelist[node]),
            ]))
        items: list[tuple[str, int, Any]] = [
            ("pmix.univ.size", px.PMIX_UINT32, self.ntasks),
            ("pmix.job.size", px.PMIX_UINT32, self.ntasks),
            ("pmix.max.size", px.PMIX_UINT32, self.ntasks),
            ("pmix.app.size", px.PMIX_UINT32, self.ntasks),
            ("pmix.local.size", px.PMIX_UINT32, len(self.local)),
            ("pmix.node.size", px.PMIX_UINT32, len(self.local)),
            ("pmix.num.nodes", px.PMIX_UINT32, len(self.nodelist)),
            ("pmix.jobid", px.PMIX_STRING, self.nspace),
            ("pmix.appnum", px.PMIX_UINT32, 0),
            ("pmix.nmap", px.PMIX_STRING, node_map_text.decode()),
            ("pmix.pmap", px.PMIX_STRING, proc_map_text.decode()),
            ("pmix.lpeers", px.PMIX_STRING, ",".join(str(r) for r in self.local)),
            ("pmix.lldr", px.PMIX_PROC_RANK, min(self.local) if self.local else 0),
            ("pmix.tmpdir", px.PMIX_STRING, self.tmpdir),
            ("pmix.hname", px.PMIX_STRING, self.nodelist[self.node_id]),
            ("pmix.nodeid", px.PMIX_UINT32, self.node_id),
            *procs,
        ]
        info = px.InfoArray(items)
        self.keep.append(info)
        self._call_and_wait("PMIx_server_register_nspace", lambda cb: lib.PMIx_server_register_nspace(
            self.nspace.encode(), len(self.local), info.pointer, info.count, cb, None))

    def _call_and_wait(self, name: str, call: Any) -> None:
        """A registration: the call, then its completion callback (from the progress thread)."""
        done = threading.Event()
        result: list[int] = []

        def finished(status: int, _cbdata: Any) -> None:
            result.append(status)
            done.set()

        callback = px.OpCb(finished)
        self.keep.append(callback)
        status = call(ctypes.cast(callback, ctypes.c_void_p))
        if status == px.PMIX_OPERATION_SUCCEEDED:
            return
        if status != px.PMIX_SUCCESS:
            raise PmixError(f"mpi/pmix: {name} failed: {px.error_string(status)}")
        if not done.wait(REGISTER_TIMEOUT_S):
            raise PmixError(f"mpi/pmix: {name}: no completion in {REGISTER_TIMEOUT_S:.0f} s")
        if result[0] != px.PMIX_SUCCESS:
            raise PmixError(f"mpi/pmix: {name} completed with {px.error_string(result[0])}")

    def task_env(self, rank: int) -> dict[str, str]:
        """PMIx_server_setup_fork's variables for task ``rank`` (its server's URI, namespace, rank)."""
        env_p = ctypes.POINTER(ctypes.c_char_p)()
        status = self.lib.PMIx_server_setup_fork(ctypes.byref(px.proc(self.nspace, rank)), ctypes.byref(env_p))
        if status != px.PMIX_SUCCESS:
            raise PmixError(f"mpi/pmix: PMIx_server_setup_fork for task {rank} failed: {px.error_string(status)}")
        env: dict[str, str] = {}
        i = 0
        while env_p and env_p[i]:
            key, sep, value = env_p[i].decode("utf-8", "surrogateescape").partition("=")
            if sep:
                env[key] = value
            i += 1
        return env

    # ------------------------------------------------------------------ the library's callbacks
    # (in the library's progress thread: note, wake plurmstepd's loop, return at once)
    def _wake(self, event: Event) -> None:
        self.events.put(event)
        try:
            os.write(self.wake_w, b"x")
        except OSError:
            pass  # (the pipe is full: the loop has wake-ups waiting already)

    def _client_connected(self, proc: Any, _obj: Any, cbfunc: Any, cbdata: Any) -> int:
        self.connected.add(int(proc.contents.rank))
        if cbfunc:
            cbfunc(px.PMIX_SUCCESS, cbdata)
        return px.PMIX_SUCCESS

    def _client_finalized(self, proc: Any, _obj: Any, cbfunc: Any, cbdata: Any) -> int:
        self.finalized.add(int(proc.contents.rank))
        if cbfunc:
            cbfunc(px.PMIX_SUCCESS, cbdata)
        return px.PMIX_SUCCESS

    def _abort(self, proc: Any, _obj: Any, status: int, msg: bytes | None, _procs: Any, _nprocs: int,
               cbfunc: Any, cbdata: Any) -> int:
        self._wake(Abort(int(proc.contents.rank), int(status), (msg or b"").decode("utf-8", "replace")))
        if cbfunc:
            cbfunc(px.PMIX_SUCCESS, cbdata)
        return px.PMIX_SUCCESS

    def _fence_nb(self, procs: Any, nprocs: int, _info: Any, _ninfo: int, data: Any, ndata: int,
                  cbfunc: Any, cbdata: Any) -> int:
        if not self._whole_step(procs, nprocs):
            # Only fences over the whole step cross srun (every node takes part); one over some
            # ranks would wait for nodes that never come: its callers get an error instead.
            sys.stderr.write(f"plurmstepd {self.job_id}.{self.step_id}: mpi/pmix: a fence over part of the step, "
                             "not supported\n")
            return px.PMIX_ERR_NOT_SUPPORTED
        blob = ctypes.string_at(data, ndata) if data and ndata else b""
        with self.lock:
            seq = self.seq
            self.seq += 1
            self.fences[seq] = (cbfunc, cbdata)
        self._wake(Fence(seq, blob))
        return px.PMIX_SUCCESS

    def _whole_step(self, procs: Any, nprocs: int) -> bool:
        """Whether a fence's participants are every rank of this step's namespace."""
        ranks: set[int] = set()
        for i in range(nprocs):
            if procs[i].nspace.decode("utf-8", "replace") != self.nspace:
                return False
            if procs[i].rank == px.PMIX_RANK_WILDCARD:
                return True
            ranks.add(int(procs[i].rank))
        return ranks == set(range(self.ntasks))

    def _direct_modex(self, _proc: Any, _info: Any, _ninfo: int, _cbfunc: Any, _cbdata: Any) -> int:
        # Every rank's data crosses in the fences (Open MPI collects it in MPI_Init).
        return px.PMIX_ERR_NOT_SUPPORTED

    def _released(self, cbdata: Any) -> None:
        self.buffers.pop(int(cbdata or 0), None)

    # ------------------------------------------------------------------ plurmstepd's side
    def take_events(self) -> list[Event]:
        """What the callbacks noted since the last look (drains the wake-up pipe)."""
        try:
            while os.read(self.wake_r, 4096):
                pass
        except OSError:
            pass
        out: list[Event] = []
        while True:
            try:
                out.append(self.events.get_nowait())
            except queue.Empty:
                return out

    def fence_done(self, seq: int, blobs: list[bytes], ok: bool = True) -> None:
        """Every node's contribution to fence ``seq``: the waiting tasks go on (``ok`` False: the
        fence failed, they get an error)."""
        with self.lock:
            entry = self.fences.pop(seq, None)
        if entry is None:
            return  # (stale, or repeated)
        cbfunc, cbdata = entry
        data = b"".join(blobs)
        buffer = ctypes.create_string_buffer(data, max(len(data), 1))
        token = id(buffer)
        self.buffers[token] = buffer
        release = px.ReleaseCb(self._released)
        self.keep.append(release)
        cbfunc(px.PMIX_SUCCESS if ok else px.PMIX_ERROR, ctypes.cast(buffer, ctypes.c_void_p) if data else None,
               len(data), cbdata, release, token)

    def close(self) -> None:
        """Finalize the library (bounded: a wedged one must not keep the step's end), drop the
        directory."""
        if self.initialized:
            self.initialized = False
            done = threading.Thread(target=self.lib.PMIx_server_finalize, daemon=True)
            done.start()
            done.join(10.0)
            if done.is_alive():
                sys.stderr.write(f"plurmstepd {self.job_id}.{self.step_id}: PMIx_server_finalize did not return\n")
        for fd in (self.wake_r, self.wake_w):
            try:
                os.close(fd)
            except OSError:
                pass
        if self.tmpdir:
            shutil.rmtree(self.tmpdir, ignore_errors=True)
