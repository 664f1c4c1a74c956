"""srun: run a parallel job step (inside an allocation, or with one of its own).

Inside a batch job (SLURM_JOB_ID set) srun asks the controller for a step,
then asks each node's plurmd to start that node's tasks.  The tasks' output
comes back to srun over a ZeroMQ socket srun binds for the step, as Slurm's
srun listens for its slurmstepds; srun prints it (``-l``: prefixed with the
task rank), and returns the worst exit status of the tasks.  Outside an
allocation srun first allocates one, and releases it at the end.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from typing import Any

from plurm.wire.client import ClientError, Connection
from plurm.tools import srun_pmi
from plurm.tools.srun_io import IoPlan, ranges
from plurm.tools.srun_wait import task_line
from plurm.tools.srun_usage import StepUsage
from plurm.tools import srun_launch
from plurm.tools.srun_bindopts import _bind_help, _binding, _binding_notes, _distribution_word
from plurm.common.stepd_texts import oom_message

LINE_HOLD_MAX = 64 * 1024  # a task's unfinished line srun holds at most (then writes it as it is)


class Step:
    """One running step: launch on every node, relay output, collect exits."""

    def __init__(self, conn: Connection, job: dict[str, Any], step: dict[str, Any], argv: list[str],
                 environ: dict[str, str], label: bool, io: IoPlan | None = None) -> None:
        import zmq

        from plurm.wire import envelope
        from plurm.wire.auth import KeyAuth, new_key
        from plurm.wire.hardening import harden

        self.zmq, self.envelope = zmq, envelope
        # The stepds sign their output and exits with a key of this step's own (srun's and
        # theirs alone); srun hands it over in the authenticated launch request.
        self.io_key = new_key()
        self.io_auth = KeyAuth(self.io_key)
        self.conn = conn
        self.job = job
        self.step = step
        self.argv = argv
        self.environ = environ
        self.label = label
        self.unbuffered = False  # -u or --pty: output as it arrives, not held to whole lines
        self.cpus_per_task: int | None = None
        # --cpu-bind, --mem-bind, --gpu-bind, -m, -c as given (LaunchTasks.binding; common/taskbind.py)
        self.binding: dict[str, Any] = {}
        self.mpi = "none"  # --mpi, SLURM_MPI_TYPE, MpiDefault (tools/srun_mpi.py)
        self.node_options: dict[str, Any] = {}  # LaunchTasks.launch (tools/srun_launch.py)
        self.pmi: Any = None  # --mpi=pmi2: the meeting point of the nodes' fences (tools/srun_pmi.py)
        self.ntasks = sum(step["tasks"])
        self.width = len(str(max(self.ntasks - 1, 0)))
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        harden(self.sock)
        self.port = self.sock.bind_to_random_port("tcp://0.0.0.0")
        self.exits: dict[int, tuple[int, int]] = {}
        self.ended: dict[int, tuple[int, int]] = {}  # task -> (code, signal) as it ended, before its exit report
        self.reported: set[int] = set()  # tasks whose end srun already said (-K: at once)
        self.waiter: Any = None
        self.usage = StepUsage()  # the nodes' OOM kills and usage, from their task_exit messages
        self.nodes_done = 0
        self.partial: dict[tuple[int, int], bytes] = {}
        self.task_node: dict[int, str] = {}
        self.io = io or IoPlan()
        self.names: dict[str, Any] = {}  # for the node-side file patterns (LaunchTasks.io)
        self.rank_node: dict[int, int] = {}  # rank -> node id
        self.peers: dict[int, bytes] = {}  # node id -> its plurmstepd's identity, once it said hello
        self.pending: dict[int, list[dict[str, Any]]] = {}  # stdin for a node not connected yet
        self.interrupted_at: float | None = None  # the first Ctrl-C (a second within 1 s aborts)
        self.aborted_at: float | None = None
        self.aborted_clock = ""  # the wall-clock time of the abort, for the cancel line
        self.winch = False
        self.fanout = 60  # -T/--threads: nodes launched on at once (tools/srun_step.py)
        self.msg_timeout = 10.0  # --msg-timeout, MessageTimeout: a node's answer to the launch
        self.preserve_env = False  # -E: SLURM_NNODES, SLURM_NTASKS as srun's environment has them

    def node_environment(self, node: str, io_host: str = "", port: int = 0) -> dict[str, str]:
        """srun's environment as the step's tasks on ``node`` start from."""
        from plurm.common.environment import step_environment

        settings = self.conn.settings
        # SLURM_WORKING_CLUSTER names the controller as slurm.conf does (SlurmctldHost's name).
        where = {"cluster": settings.cluster_name, "conf_path": settings.conf,
                 "ctld_host": settings.host_names[0], "ctld_port": settings.port}
        env = step_environment(self.environ, self.job, node, srun_host=io_host, srun_port=port,
                               distribution=_distribution_word(self.binding.get("distribution")), **where)
        if self.step.get("resv_ports"):  # --resv-ports, MpiParams=ports (corescheduler/step_resources.py)
            env["SLURM_STEP_RESV_PORTS"] = self.step["resv_ports"]
        if self.preserve_env:  # -E (22.05.8: the job's node count too, and SLURM_NPROCS with SLURM_NTASKS)
            from plurm.common.environment import PRESERVE_ENV_MARK

            kept = [n for n in ("SLURM_NNODES", "SLURM_JOB_NUM_NODES", "SLURM_NTASKS", "SLURM_NPROCS")
                    if n in self.environ]
            env.update({n: self.environ[n] for n in kept})
            env[PRESERVE_ENV_MARK] = ",".join(kept)
        return env

    def launch(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        from plurm.common.taskbind import distribution_env, option_env, parse_distribution, rank_layout

        settings = self.conn.settings

        # -m: which ranks each node runs (block: consecutive; cyclic, plane=N: dealt out)
        layout = rank_layout(parse_distribution(self.binding.get("distribution")), self.step["tasks"])
        pmi_mapping = self._pmi_mapping(layout)
        nodelist = self.step["nodes"]
        io_host = "127.0.0.1" if all(a["addr"] in ("127.0.0.1", "localhost") for a in self.step["addrs"]) \
            else os.uname().nodename
        requests: list[tuple[dict[str, Any], dict[str, Any]]] = []
        for node_id, (addr, count) in enumerate(zip(self.step["addrs"], self.step["tasks"])):
            task_ids = layout[node_id]
            for t in task_ids:
                self.task_node[t] = addr["name"]
                self.rank_node[t] = node_id
            env = self.node_environment(addr["name"], io_host, self.port)
            env.update(option_env(self.binding.get("cpu_bind"), self.binding.get("mem_bind")))
            if str(self.binding.get("distribution") or "").lower().startswith("plane="):
                env.update(distribution_env(self.binding["distribution"]))  # SLURM_DIST_PLANESIZE
            if self.cpus_per_task is not None:
                env["SLURM_CPUS_PER_TASK"] = str(self.cpus_per_task)
            body = {
                "job_id": self.job["job_id"], "step_id": self.step["step_id"], "node_id": node_id,
                "task_ids": task_ids, "ntasks": self.ntasks, "nodelist": nodelist,
                "tasks_per_node": self.step["tasks"], "argv": self.argv, "environment": env,
                "work_dir": os.getcwd(), "io_host": io_host, "io_port": self.port,
                "job_gres": self._node_gres(addr["name"]),
                "uid": os.getuid(), "gid": os.getgid(),
                "credential": self.step.get("credential", {}), "io_key": self.io_key.decode(),
                "io": self.io.node_io(self.names), "binding": self.binding,
                "mpi": self.mpi, "pmi_mapping": pmi_mapping, "launch": self.node_options,
            }
            requests.append((addr, body))

        def send(addr: dict[str, Any], body: dict[str, Any]) -> None:
            node_conn = Connection(settings, host=addr["addr"], port=addr["port"], timeout=self.msg_timeout)
            try:
                node_conn.request("launch_tasks", body)
            except ClientError as exc:
                raise ClientError(f"Task launch for StepId={self.job['job_id']}.{self.step['step_id']} "
                                  f"failed on node {addr['name']}: {exc}", exc.code) from None
            finally:
                node_conn.close()

        # -T/--threads: at most that many launch requests in flight (srun's fan-out; 60 by default)
        with ThreadPoolExecutor(max_workers=max(1, min(self.fanout, len(requests) or 1))) as pool:
            for future in [pool.submit(send, addr, body) for addr, body in requests]:
                future.result()

    def _pmi_mapping(self, layout: list[list[int]]) -> str:
        from plurm.tools.srun_pmi import process_mapping

        return process_mapping(layout) if self.mpi != "none" else ""  # (pmi2's, and pmix's layout)

    def _node_gres(self, node: str) -> dict[str, list[int]]:
        nodes = self.job.get("nodes", [])
        alloc = self.job.get("gres_alloc") or []
        return dict(alloc[nodes.index(node)]) if node in nodes and nodes.index(node) < len(alloc) else {}

    def _emit(self, task: int, stream: int, data: bytes, final: bool = False) -> None:
        plan = self.io.out if stream == 1 else self.io.err
        if not plan.wants(task):
            return
        out = plan.handle or (sys.stdout.buffer if stream == 1 else sys.stderr.buffer)
        if self.unbuffered and not self.label:  # -u, --pty: as it arrives
            out.write(data)
            out.flush()
            return
        # Whole lines per task, as 22.05 without -u: two tasks' partial writes never mix in a line.
        key = (task, stream)
        buf = self.partial.pop(key, b"") + data
        cut = buf.rfind(b"\n") + 1
        whole, rest = buf[:cut], buf[cut:]
        if final or len(rest) > LINE_HOLD_MAX:  # (a task's last words, or a line too long to hold)
            whole, rest = buf, b""
        if self.label:
            prefix = f"{task:>{self.width}}: ".encode()
            lines = whole.split(b"\n")
            if not lines[-1]:
                lines.pop()
            out.write(b"".join(prefix + line + b"\n" for line in lines))
        else:
            out.write(whole)
        if rest:
            self.partial[key] = rest
        out.flush()

    def signal(self, signum: int) -> None:
        settings = self.conn.settings
        for addr in self.step["addrs"]:
            node_conn = Connection(settings, host=addr["addr"], port=addr["port"], timeout=2.0)
            try:
                node_conn.request("signal_tasks", {"job_id": self.job["job_id"], "step_id": self.step["step_id"],
                                                   "signal": signum})
            except ClientError:
                pass
            finally:
                node_conn.close()

    # ------------------------------------------------------------------ srun -> plurmstepd
    def _to_node(self, node_id: int, kind: str, body: dict[str, Any]) -> None:
        peer = self.peers.get(node_id)
        if peer is None:  # not connected yet: a ROUTER would drop it
            self.pending.setdefault(node_id, []).append({"kind": kind, "body": body})
            return
        self.sock.send_multipart([peer, b""] + self.envelope.seal(self.io_auth, kind, body))

    def _stdin_nodes(self) -> dict[int, list[int]]:
        nodes: dict[int, list[int]] = {}
        for rank in self.io.stdin_tasks or []:
            if rank in self.rank_node:
                nodes.setdefault(self.rank_node[rank], []).append(rank)
        return nodes

    def _forward_stdin(self, data: bytes) -> None:
        text = data.decode("utf-8", "surrogateescape")
        for node_id, tasks in self._stdin_nodes().items():
            self._to_node(node_id, "stdin", {"tasks": tasks, "data": text, "eof": not data})

    def on_interrupt(self) -> None:
        """Ctrl-C on a running step, as Slurm's srun: the first reports the tasks, a second
        within a second sends SIGINT to them and ends the step."""
        now = time.monotonic()
        step_name = f"StepId={self.job['job_id']}.{self.step['step_id']}"
        if self.aborted_at is not None:
            return
        if getattr(self, "disable_status", False):  # -X: the tasks get the SIGINT at once (22.05.8's line)
            print(f"srun: sending Ctrl-C to {step_name}", file=sys.stderr, flush=True)
            self.signal(signal.SIGINT)
            return
        if getattr(self, "quit_on_interrupt", False) and self.interrupted_at is None:
            self.interrupted_at = now  # --quit-on-interrupt: the first Ctrl-C aborts (22.05.8)
        elif self.interrupted_at is None or now - self.interrupted_at > 1.0:
            self.interrupted_at = now
            print("srun: interrupt (one more within 1 sec to abort)", file=sys.stderr)
            running = [t for t in range(self.ntasks) if t not in self.exits]
            done = [t for t in range(self.ntasks) if t in self.exits]
            for tasks, what in ((running, "running"), (done, "exited")):
                if tasks:
                    word = "task" if len(tasks) == 1 else "tasks"
                    print(f"srun: {step_name} {word} {ranges(tasks)}: {what}", file=sys.stderr)
            return
        self.aborted_at = now
        self.aborted_clock = time.strftime("%Y-%m-%dT%H:%M:%S")
        print(f"srun: sending Ctrl-C to {step_name}", file=sys.stderr)
        self.signal(signal.SIGINT)
        print("srun: forcing job termination", file=sys.stderr)
        print("srun: Job step aborted: Waiting up to 32 seconds for job step to finish.", file=sys.stderr)

    def relay(self) -> None:
        from plurm.tools.srun_io import step_messages

        zmq = self.zmq
        key = self.io_auth
        poller = zmq.Poller()
        poller.register(self.sock, zmq.POLLIN)
        source = self.io.stdin_source
        stdin_fd = None
        if source is not None and self.io.stdin_tasks:
            try:
                stdin_fd = source.fileno()
                poller.register(stdin_fd, zmq.POLLIN)
            except (OSError, ValueError):  # no stdin at all (closed): the tasks get EOF
                stdin_fd = None
                self._forward_stdin(b"")
        nodes = len(self.step["nodes"])
        from plurm.tools.srun_wait import FirstExitWait

        self.waiter = waiter = FirstExitWait.of(self)  # -W/--wait, -K: the step ended early (srun_wait.py)
        last_check = time.monotonic()
        gone_since: float | None = None
        termed = killed = False
        while self.nodes_done < nodes:
            ready = dict(poller.poll(500))
            if stdin_fd is not None and ready.get(stdin_fd):
                try:
                    data = os.read(stdin_fd, 65536)
                except OSError:
                    data = b""
                self._forward_stdin(data)
                if not data:
                    poller.unregister(stdin_fd)
                    stdin_fd = None
            if ready.get(self.sock):
                for peer, kind, body in step_messages(self.sock, key):
                    if kind == "task_output":
                        self._emit(body["task"], body["stream"], body["data"].encode("utf-8", "surrogateescape"))
                    elif kind == "task_exit":
                        for stream in (1, 2):
                            if (body["task"], stream) in self.partial:
                                self._emit(body["task"], stream, b"", final=True)
                        self.exits[body["task"]] = (body["exit_code"], body["signal"])
                        if body.get("launch_failed"):  # (its binding could not be set: 22.05.8's line)
                            print(f"srun: error: task {body['task']} launch failed: {body['launch_failed']}",
                                  file=sys.stderr)
                        self.usage.add(self.task_node.get(body["task"], "?"), body["task"], body)
                    elif kind == "task_ended" and isinstance(body.get("task"), int):  # as it happened (-W)
                        self.ended[body["task"]] = (int(body.get("exit_code") or 0), int(body.get("signal") or 0))
                    elif kind == "srun_words":  # a node's words for srun to say (tools/srun_launch.py)
                        srun_launch.say(self, body)
                    elif kind == "debugger_tasks":  # --debugger-test: the stopped tasks (tools/srun_debugger.py)
                        from plurm.tools import srun_debugger

                        srun_debugger.on_tasks(self, body)
                    elif kind == "node_done":
                        self.nodes_done += 1
                    elif kind.startswith("pmi_") and self.pmi is not None:
                        self.pmi.on_message(kind, body)
                    elif kind == "stepd_hello" and isinstance(body.get("node_id"), int):
                        self.peers[body["node_id"]] = peer
                        for item in self.pending.pop(body["node_id"], []):
                            self._to_node(body["node_id"], item["kind"], item["body"])
            if self.winch:
                self.winch = False
                from plurm.tools.srun_io import terminal_size

                self._to_node(self.rank_node.get(0, 0), "winsize", {"size": terminal_size()})
            now = time.monotonic()
            waiter.check(now)
            if self.aborted_at is not None:
                # After the Ctrl-C pair: the step is ended (SIGTERM, then SIGKILL), as a cancel would.
                if not termed and now - self.aborted_at > 0.5:
                    termed = True
                    self.signal(signal.SIGTERM)
                elif not killed and now - self.aborted_at > 5.0:
                    killed = True
                    self.signal(signal.SIGKILL)
            if now - last_check > 2.0:
                # A cancelled or timed-out job: its stepds are killed; don't wait forever.
                last_check = now
                from plurm.tools.allocation import job_record

                job = self.job if self.job.get("no_allocate") else job_record(self.conn, self.job["job_id"])  # (-Z)
                if job is None or job.get("state") not in ("RUNNING", "SUSPENDED"):
                    gone_since = gone_since or now
                    if now - gone_since > 5.0:
                        break

    def result(self) -> tuple[int, int]:
        """(exit code, signal) of the step: the worst task's, as srun reports it."""
        worst_code, worst_sig = 0, 0
        if self.aborted_at is not None:
            # A step aborted by the Ctrl-C pair: 22.05 shows its slurmstepd's cancel line (our
            # plurmstepd has no line of its own for it, so srun writes it for the first node).
            node = self.task_node.get(0, "?")
            print(f"slurmstepd-{node}: error: *** STEP {self.job['job_id']}.{self.step['step_id']} ON {node} "
                  f"CANCELLED AT {self.aborted_clock} ***", file=sys.stderr)
        for task in range(self.ntasks):
            code, sig = self.exits.get(task, (0, signal.SIGKILL))
            if self.aborted_at is not None and not getattr(self, "quit_on_interrupt", False):
                # 22.05 reports no task of a step aborted by the Ctrl-C pair (but with --quit-on-interrupt)
                worst_sig = worst_sig or sig
            elif (sig or code) and self.usage.oom_node(self.task_node.get(task, "?")):
                # Ended on a node where the kernel OOM-killed in the step's cgroup: 22.05's words.
                print(f"srun: error: {self.task_node.get(task, '?')}: task {task}: Out Of Memory", file=sys.stderr)
                worst_sig = worst_sig or sig
            elif sig:
                if task not in self.reported:  # (22.05 words a signal as strsignal: Killed, Terminated)
                    print(task_line(self.task_node.get(task, "?"), task, code, sig), file=sys.stderr)
                worst_sig = worst_sig or sig
            elif code and task not in self.reported:
                print(task_line(self.task_node.get(task, "?"), task, code, sig), file=sys.stderr)
            worst_code = max(worst_code, code)
        for node, kills in sorted(self.usage.oom.items()):
            # 22.05's slurmstepd says so on the step's stderr, after srun's task lines.
            sys.stderr.write(oom_message(kills, self.job["job_id"], self.step["step_id"], node))
        if self.waiter is not None:  # -K: "Force Terminated", exit 143 (srun_wait.py)
            return self.waiter.finish(worst_code, worst_sig)
        return worst_code, worst_sig

    def close(self) -> None:
        for task, stream in list(self.partial):  # (unfinished lines of tasks whose end never came)
            self._emit(task, stream, b"", final=True)
        self.sock.close()
        self.ctx.term()


def _step_name(given: bool, options: dict[str, Any], command: list[str], own_allocation: bool) -> str:
    """A step is named after its command, unless -J is on srun's own command line
    (``given``: inside a batch job SLURM_JOB_NAME is set, and names the job, not its
    steps)."""
    if options.get("job-name") and (given or own_allocation):
        return str(options["job-name"])
    return os.path.basename(command[0])


def main(argv: list[str] | None = None) -> int:
    from plurm.tools.sbatch_cli import parse_srun
    from plurm.tools.frontend import parse_or_answer

    argv = sys.argv[1:] if argv is None else argv
    environ = dict(os.environ)
    from plurm.common.taskbind import plane_from_env

    plane_from_env(environ)  # SLURM_DISTRIBUTION=plane + SLURM_DIST_PLANESIZE=N: -m plane=N
    req, done = parse_or_answer("srun", parse_srun, argv, environ)
    if req is None:
        return done
    options = req.options
    for warning in req.warnings:
        print(warning, file=sys.stderr)
    from plurm.tools import srun_mpi

    mpi_done = srun_mpi.answer(options.get("mpi"))  # --mpi=list, or a type without a plugin
    if mpi_done is not None:
        return mpi_done
    helped = _bind_help(options)  # --cpu-bind=help, --mem-bind=help: answered as the option is read
    if helped is not None:
        return helped
    if not req.command:
        print("srun: fatal: No command given to execute.", file=sys.stderr)
        return 1
    early = srun_launch.check(options, req.command)  # --accel-bind, --send-libs, --multi-prog's file, ...
    if early is not None:
        return early
    from plurm.tools import srun_step

    try:  # --exact with --whole, -r with -w/-x, -T above 60, -Z without -w (tools/srun_step.py, srun_noalloc.py)
        from plurm.tools.srun_noalloc import check as check_no_allocate

        check_no_allocate(options)
        for line in srun_step.check_options(options):
            print(line, file=sys.stderr)
    except srun_step.StepOptionError as exc:
        print("\n".join(exc.lines), file=sys.stderr)
        return 1
    from plurm.tools.options_rest import RefusedOption, check_clusters, check_x11, job_variables

    try:  # --x11, -M/--clusters (tools/options_rest.py)
        check_x11("srun", options, environ)
        check_clusters("srun", options)
    except RefusedOption as exc:
        print("\n".join(exc.lines), file=sys.stderr)
        return exc.exit_code
    environ.update(job_variables("srun", options))  # the tasks' SLURM_CPU_FREQ_REQ, SLURM_CONTAINER
    if str(options.get("distribution") or "").lower().startswith("arbitrary") and not options.get("nodelist") \
            and not environ.get("SLURM_HOSTFILE"):
        print("srun: error: With Arbitrary distribution you need to specify a nodelist or hostfile with the -w "
              "option", file=sys.stderr)
        return 1
    from plurm.tools.allocation import AllocationError, allocate, job_record, release
    from plurm.tools.jobspec import build_spec

    try:
        conn = Connection()
    except ClientError as exc:
        print(f"srun: error: {exc}", file=sys.stderr)
        return 1
    for note in _binding_notes(options, conn.settings.conf):  # (22.05.8: as it reads the option)
        print(note, file=sys.stderr)
    from plurm.tools.propagate import PropagateError, submit_variables

    try:  # --propagate, PropagateResourceLimits: srun's soft limits for its tasks (tools/propagate.py)
        environ.update(submit_variables("srun", options.get("propagate"), conn.settings.conf))
    except PropagateError as exc:
        print(exc.line, file=sys.stderr)
        return 1
    mpi = srun_mpi.chosen(options.get("mpi"), conn.settings.conf)
    if mpi is None:
        return 1
    from plurm.tools import srun_het

    if srun_het.several(options, environ, len(req.components)):  # srun A : B, --het-group=0,1 (area: hetjob)
        conn.close()
        return srun_het.run_components(argv, req, environ)
    het_job, het_group, het_error = srun_het.component_job(options, environ)  # --het-group=K
    if het_error:
        print(het_error, file=sys.stderr)
        return 1
    if het_job:
        srun_het.component_options(options, req.cmdline_keys, environ, het_group)
    job_id_text = het_job or options.get("jobid") or environ.get("SLURM_JOB_ID")
    own_allocation = job_id_text is None
    from plurm.tools.jobspec_topology import spec_resources_notice

    for line in spec_resources_notice("srun", options):  # -S, --thread-spec (area: topology)
        print(line, file=sys.stderr)
    if options.get("no-allocate"):  # -Z: no job, the -w nodes (tools/srun_noalloc.py)
        from plurm.tools import srun_noalloc

        made = srun_noalloc.create(conn, options, req.command, _step_name(True, options, req.command, True))
        if isinstance(made, int):
            return made
        (job, step_info), own_allocation = made, False
        job_id = job["job_id"]
    else:
        try:
            if own_allocation:
                srun_step.check_relative(options, req.cmdline_keys, environ, True, None)
                spec = build_spec(options, default_name=os.path.basename(req.command[0]), environ=environ, batch=False,
                                  raw_options=req.raw_options)
                job = allocate(conn, spec, "srun", quiet=bool(options.get("quiet")))
            else:
                job = job_record(conn, int(str(job_id_text).split("_")[0]))
                if job is None or job.get("state") != "RUNNING":
                    print(f"srun: error: Unable to confirm allocation for job {job_id_text}: Invalid job id specified",
                          file=sys.stderr)
                    print(f"srun: Check SLURM_JOB_ID environment variable. Expired or invalid job {job_id_text}",
                          file=sys.stderr)
                    return 1
                srun_step.check_relative(options, req.cmdline_keys, environ, False, job)  # -r (22.05.8's words)
        except KeyboardInterrupt:  # before the controller gave a job id: nothing to cancel
            return 1
        except (AllocationError, srun_step.StepOptionError) as exc:
            print("\n".join(getattr(exc, "lines", [str(exc)])), file=sys.stderr)
            return getattr(exc, "exit_code", 1)  # (-I: SLURM_EXIT_IMMEDIATE's)
        job_id = job["job_id"]
        made_step = srun_step.make(conn, options, job, own_allocation, _step_name(
            "job-name" in req.cmdline_keys, options, req.command, own_allocation))
        if made_step is None:
            return 1
        step_info = made_step
    from plurm.tools.srun_io import IoError, RawTerminal, plan

    spec_of = job.get("spec") or {}
    names = {"job_id": job_id, "job_name": spec_of.get("name", ""), "user": spec_of.get("user", ""),
             "array_job_id": job.get("array_job_id"), "array_task_id": job.get("array_task_id"),
             "step": str(step_info["step_id"])}
    try:
        io = plan(options, sum(step_info["tasks"]), names, os.getcwd())
    except IoError as exc:
        print(exc, file=sys.stderr)
        try:
            conn.request("step_complete", {"job_id": job_id, "step_id": step_info["step_id"], "exit_code": 1,
                                           "exit_signal": 0})
        except ClientError:
            pass
        if own_allocation:
            release(conn, job_id, 1)
        return 1
    step = Step(conn, job, step_info, req.command, environ, bool(options.get("label")), io)
    step.names = names
    step.cpus_per_task = options.get("cpus-per-task")
    step.wait_s = options.get("wait") or 0  # -W/--wait=<seconds> (tools/srun_wait.py)
    step.kill_bad = options.get("kill-on-bad-exit") not in (None, False, 0, "0")  # -K
    step.disable_status = bool(options.get("disable-status"))  # -X
    step.unbuffered = bool(options.get("unbuffered")) or io.pty  # -u
    step.quit_on_interrupt = bool(options.get("quit-on-interrupt"))
    step.binding = _binding(options, step_info)
    step.mpi = mpi
    failed = srun_launch.prepare(step, options, req.command)  # LaunchTasks.launch (tools/srun_launch.py)
    if failed is not None:
        srun_launch.abandon(conn, job_id, step_info["step_id"], own_allocation)
        return failed
    step.pmi = srun_pmi.relay_for(mpi, len(step_info["nodes"]), step._to_node)
    step.fanout = srun_step.fanout(options, len(step_info["nodes"]))  # -T
    step.msg_timeout = srun_step.msg_timeout(options, conn.settings.conf)  # --msg-timeout
    step.preserve_env = bool(options.get("preserve-env"))  # -E
    from plurm.tools import srun_scripts

    prolog_failed = srun_scripts.prolog(step, options, conn.settings.conf)  # --prolog, SrunProlog
    previous = signal.signal(signal.SIGINT, lambda *_: step.on_interrupt())
    signal.signal(signal.SIGTERM, lambda *_: step.signal(signal.SIGTERM))
    if io.pty:
        signal.signal(signal.SIGWINCH, lambda *_: setattr(step, "winch", True))
    code, sig = 1, 0
    try:
        if prolog_failed is None:
            with RawTerminal() if io.pty else contextlib.nullcontext():
                step.launch()
                step.relay()
            code, sig = step.result()
        else:
            code, sig = 0, prolog_failed - 128  # (the step never started: cancelled as 22.05's, SIGKILL)
    except ClientError as exc:
        print(f"srun: error: {exc}", file=sys.stderr)
    finally:
        signal.signal(signal.SIGINT, previous)
        step.close()
        io.close()
        srun_scripts.epilog(step, options, conn.settings.conf)  # --epilog, SrunEpilog
        oom_kills = step.usage.oom_kills()
        try:
            conn.request("step_complete", {"job_id": job_id, "step_id": step_info["step_id"], "exit_code": code,
                                           "exit_signal": sig, "oom_kills": oom_kills,
                                           "usage": step.usage.summary()})
        except ClientError:
            pass
        if own_allocation and oom_kills:  # the job ends OUT_OF_MEMORY with its step
            try:
                conn.request("job_complete", {"job_id": job_id, "exit_code": code, "oom_kills": oom_kills})
            except ClientError:
                pass
        elif own_allocation:
            release(conn, job_id, code)
        conn.close()
    if step.usage.oom_kills():
        return code or 1  # (22.05's srun of an OOM-killed step: 1)
    return 128 + sig if sig and not code else code


if __name__ == "__main__":
    sys.exit(main())
