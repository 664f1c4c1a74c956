"""sattach: attach to a running job step's output (Slurm 22.05's sattach).

The step's node daemons hand this command's listener to the step's plurmstepd
(nodeagent/stepd_attach.py), which from then on sends it what it sends srun: the tasks' output,
their exits and each node's end, signed with a key this command made for it.  sattach prints the
output (``--label``, ``--output-filter``, ``--error-filter``), sends its stdin to the tasks
(``--input-filter``; its end too, as 22.05's), and exits 0 when every node of the step has
ended.  What was written before the attach is not replayed, as in Slurm.  The messages and
exit codes of the error cases are 22.05's (tests/integration/reference/interactive/INDEX.md).
"""

from __future__ import annotations

import re
import sys
import time
from typing import Any

from plurm.common.cli import Usage, getopt_or_usage

PROG = "sattach"
USAGE = "Usage: sattach [options] <jobid.stepid>\n"
HELP = USAGE + """\
      --input-filter=taskid  send stdin to only the specified task
      --output-filter=taskid only print stdout from the specified task
      --error-filter=taskid  only print stderr from the specified task
  -l, --label        prepend task number to lines of stdout & stderr
      --layout       print task layout info and exit (does not attach to tasks)
  -Q, --quiet        quiet mode (suppress informational messages)
  -v, --verbose      verbose mode (multiple -v's increase verbosity)
  -V, --version      print the Slurm version and exit

Help options:
  -h, --help         print this help message
  -u, --usage        print a brief usage message
"""
SHORT_OPTS = "hlQuvV"
LONG_OPTS = {"help": ("h", 0), "label": ("l", 0), "quiet": ("Q", 0), "usage": ("u", 0), "verbose": ("v", 0),
             "version": ("V", 0), "input-filter": ("input-filter", 1), "output-filter": ("output-filter", 1),
             "error-filter": ("error-filter", 1), "layout": ("layout", 0)}


class Options:
    def __init__(self) -> None:
        self.label = False
        self.quiet = False
        self.layout = False
        self.filters: dict[int, int | None] = {0: None, 1: None, 2: None}  # stream -> its one task
        self.job_id = 0
        self.step_id = 0


def _fail(text: str) -> Usage:
    """22.05: the error on stderr, then the usage line on stdout, exit 1."""
    return Usage(f"sattach: error: {text}\n", 1, "stderr", usage=USAGE)


def parse_args(argv: list[str]) -> Options:
    o = Options()
    pairs, operands = getopt_or_usage(PROG, argv, SHORT_OPTS, LONG_OPTS)
    for key, value in pairs:
        if key == "h":
            raise Usage(HELP, 0)
        if key == "u":
            raise Usage(USAGE, 0)
        if key == "V":
            from plurm import write_version

            write_version()
            raise Usage("", 0)
        if key == "l":
            o.label = True
        elif key == "Q":
            o.quiet = True
        elif key == "layout":
            o.layout = True
        elif key in ("input-filter", "output-filter", "error-filter"):
            if value is None or not value.isdigit():
                raise _fail(f"Invalid {key} task id: {value}")
            o.filters[{"input-filter": 0, "output-filter": 1, "error-filter": 2}[key]] = int(value)
    if len(operands) != 1:  # none as well: 22.05 says "too many parameters" then too
        raise _fail("too many parameters")
    m = re.fullmatch(r"(\d+)\.(\d+)", operands[0])
    if m is None:
        raise _fail("Failed to parse stepid from command line options")
    o.job_id, o.step_id = int(m.group(1)), int(m.group(2))
    return o


def main(argv: list[str] | None = None) -> int:
    try:
        options = parse_args(sys.argv[1:] if argv is None else argv)
    except Usage as exc:
        return exc.write()
    from plurm.wire.client import ClientError, Connection

    try:
        conn = Connection()
        step = _find_step(conn, options)
        if step is None:
            print("sattach: error: Could not get job step info: Invalid job id specified", file=sys.stderr)
            return 1
        if options.layout:
            _print_layout(step)
            return 0
        return Attachment(conn, options, step).run()
    except ClientError as exc:
        print(f"sattach: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # detaching leaves the step running, as Slurm's sattach
        return 0


def _find_step(conn: Any, options: Options) -> dict[str, Any] | None:
    from plurm.wire.client import ClientError

    try:
        reply = conn.request("step_info", {"job_ids": [str(options.job_id)]})
    except ClientError:
        return None  # an unknown job: 22.05 says the same as for an unknown step
    for step in reply.get("steps", []):
        if step.get("job_id") == options.job_id and str(step.get("step_id")) == str(options.step_id):
            return step
    return None


def _print_layout(step: dict[str, Any]) -> None:
    nodes = step.get("nodes") or []
    print(f"Job step layout:\n\t{step.get('ntasks', 0)} tasks, {len(nodes)} nodes ({','.join(nodes)})")


class Attachment:
    """The listener: a ROUTER the step's plurmstepds connect to, one key for all of them."""

    def __init__(self, conn: Any, options: Options, step: dict[str, Any]) -> None:
        import zmq

        from plurm.wire.auth import KeyAuth, new_key
        from plurm.wire.hardening import harden

        self.zmq, self.conn, self.options, self.step = zmq, conn, options, step
        self.key = new_key()
        self.auth = KeyAuth(self.key)
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        harden(self.sock)
        self.port = self.sock.bind_to_random_port("tcp://0.0.0.0")
        self.partial: dict[tuple[int, int], bytes] = {}
        self.width = len(str(max(int(step.get("ntasks", 1)) - 1, 0)))
        self.peers: dict[bytes, list[int]] = {}  # a node's plurmstepd (its identity) -> the tasks there
        self.stdin_sent: list[tuple[str, bool]] = []  # what a node that says hello late has missed

    def run(self) -> int:
        try:
            attached = self._attach()
            if attached:
                self._relay(attached)
            return 0
        finally:
            self.sock.close()
            self.ctx.term()
            self.conn.close()

    def _attach(self) -> int:
        """Ask each node of the step to send here; the number that will."""
        from plurm.wire.client import ClientError, Connection

        reply = self.conn.request("node_info", {"nodes": list(self.step.get("nodes") or [])})
        attached = 0
        for node in reply.get("nodes", []):
            local = node.get("addr") in ("127.0.0.1", "localhost")
            body = {"job_id": self.options.job_id, "step_id": self.options.step_id,
                    "io_host": "127.0.0.1" if local else _own_name(), "io_port": self.port,
                    "io_key": self.key.decode()}
            node_conn = Connection(self.conn.settings, host=node["addr"], port=node["port"], timeout=10.0)
            try:
                node_conn.request("attach_step", body)
                attached += 1
            except ClientError as exc:
                # 22.05: a step whose tasks have ended on a node, and it carries on with the rest
                print(f"sattach: Node {node.get('name')}: {exc}", file=sys.stderr)
            finally:
                node_conn.close()
        return attached

    def _relay(self, nodes: int) -> None:
        from plurm.tools.srun_io import step_messages

        zmq = self.zmq
        done = 0
        last_check = time.monotonic()
        poller = zmq.Poller()
        poller.register(self.sock, zmq.POLLIN)
        stdin_fd = _stdin_fd()
        if stdin_fd is not None:
            poller.register(stdin_fd, zmq.POLLIN)
        while done < nodes:
            ready = dict(poller.poll(500))
            if stdin_fd is not None and ready.get(stdin_fd):
                import os

                try:
                    data = os.read(stdin_fd, 65536)
                except OSError:
                    data = b""
                # Its end is the tasks' too (22.05: a task whose input sattach ended reads no
                # more of srun's).
                self._forward_stdin(data.decode("utf-8", "surrogateescape"), not data)
                if not data:
                    poller.unregister(stdin_fd)
                    stdin_fd = None
            if ready.get(self.sock):
                for peer, kind, body in step_messages(self.sock, self.auth):
                    if kind == "task_output":
                        self._emit(int(body["task"]), int(body["stream"]),
                                   str(body["data"]).encode("utf-8", "surrogateescape"))
                    elif kind == "task_exit":
                        for stream in (1, 2):
                            if (body.get("task"), stream) in self.partial:
                                self._emit(int(body["task"]), stream, b"", final=True)
                    elif kind == "node_done":
                        done += 1
                    elif kind == "stepd_hello" and isinstance(body.get("tasks"), list):
                        self.peers[peer] = [t for t in body["tasks"] if isinstance(t, int)]
                        for text, eof in self.stdin_sent:
                            self._to_peer(peer, text, eof)
            now = time.monotonic()
            if now - last_check > 2.0:  # a step whose node died sends no end: ask the controller
                last_check = now
                if _find_step(self.conn, self.options) is None:
                    return

    def _forward_stdin(self, text: str, eof: bool) -> None:
        self.stdin_sent.append((text, eof))
        for peer in self.peers:
            self._to_peer(peer, text, eof)

    def _to_peer(self, peer: bytes, text: str, eof: bool) -> None:
        wanted = self.options.filters.get(0)
        tasks = [t for t in self.peers[peer] if wanted is None or t == wanted]
        if tasks:
            body = {"tasks": tasks, "data": text, "eof": eof}
            self.sock.send_multipart([peer, b""] + _envelope().seal(self.auth, "stdin", body))

    def _emit(self, task: int, stream: int, data: bytes, final: bool = False) -> None:
        wanted = self.options.filters.get(stream)
        if wanted is not None and wanted != task:
            return
        out = sys.stdout.buffer if stream == 1 else sys.stderr.buffer
        if not self.options.label:
            out.write(data)
            out.flush()
            return
        buf = self.partial.pop((task, stream), b"") + data
        lines = buf.split(b"\n")
        rest = lines.pop()
        prefix = f"{task:>{self.width}}: ".encode()
        for line in lines:
            out.write(prefix + line + b"\n")
        if rest and final:
            out.write(prefix + rest + b"\n")
        elif rest:
            self.partial[(task, stream)] = rest
        out.flush()


def _stdin_fd() -> int | None:
    try:
        return sys.stdin.fileno()
    except (OSError, ValueError, AttributeError):  # no stdin at all
        return None


def _envelope() -> Any:
    from plurm.wire import envelope

    return envelope


def _own_name() -> str:
    import os

    return os.uname().nodename


if __name__ == "__main__":
    sys.exit(main())
