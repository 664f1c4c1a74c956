"""sattach's listeners of a running step (Slurm's sattach attaches to slurmstepd's I/O).

plurmd gets the authenticated ``attach_step`` request and posts the listener (address, port, the
key sattach made for it) as a file in the step's attach folder under its spool; plurmstepd looks
there on each turn of its loop, connects a DEALER to each new listener, and from then on sends
it what it sends srun (output, task exits, the node's end) and takes its stdin as srun's.  A file, not a signal: every signal
plurmstepd gets is the tasks' (stepd.FORWARDED); a folder only root (plurmd and plurmstepd run
as root or plurmd's user) can write keeps another user from posting a listener.  Output written
before the attach is not replayed (as Slurm's).
"""

from __future__ import annotations

import json
import logging
import os
import secrets
from typing import Any

import zmq

from plurm.wire import envelope
from plurm.wire.auth import KeyAuth

log = logging.getLogger("plurm.stepd")


def folder(spool: str, job_id: int, step_id: int) -> str:
    return os.path.join(spool, "attach", f"{job_id}.{step_id}")


def post(spool: str, job_id: int, step_id: int, body: dict[str, Any]) -> None:
    """plurmd's side: one listener, written whole and then renamed (its temporary name does
    not end in .json: plurmstepd never reads it half-written)."""
    from plurm.nodeagent.jobstate import write_json

    where = folder(spool, job_id, step_id)
    os.makedirs(where, mode=0o700, exist_ok=True)
    write_json(os.path.join(where, f"{secrets.token_hex(8)}.json"), body)


class Listeners:
    """plurmstepd's side: the sattach listeners of this step on this node."""

    def __init__(self, ctx: zmq.Context, spool: str, job_id: int, step_id: int, node_id: int,
                 task_ids: list[int]) -> None:
        self.ctx, self.node_id, self.task_ids = ctx, node_id, task_ids
        self.where = folder(spool, job_id, step_id)
        self.peers: list[tuple[zmq.Socket, KeyAuth]] = []

    def poll(self, poller: zmq.Poller) -> None:
        """Connect to the listeners posted since the last turn (their stdin comes in through
        ``poller``, as srun's does)."""
        try:
            names = [n for n in os.listdir(self.where) if n.endswith(".json")]
        except OSError:
            return  # nobody has attached
        for name in names:
            path = os.path.join(self.where, name)
            try:
                with open(path) as f:
                    body = json.load(f)
                os.unlink(path)
                host, port, key = str(body["io_host"]), int(body["io_port"]), str(body["io_key"]).encode()
            except (OSError, ValueError, KeyError, TypeError) as exc:
                log.warning("attach request %s dropped: %s", path, exc)
                try:
                    os.unlink(path)
                except OSError:
                    pass
                continue
            sock = self.ctx.socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 1000)
            sock.setsockopt(zmq.IDENTITY, f"n{self.node_id}".encode())  # sattach sends stdin to it
            sock.connect(f"tcp://{host}:{port}")
            auth = KeyAuth(key)
            self.peers.append((sock, auth))
            poller.register(sock, zmq.POLLIN)
            self._send(sock, auth, "stepd_hello", {"node_id": self.node_id, "tasks": self.task_ids})

    def send(self, kind: str, body: dict[str, Any]) -> None:
        for sock, auth in self.peers:
            self._send(sock, auth, kind, body)

    @staticmethod
    def _send(sock: zmq.Socket, auth: KeyAuth, kind: str, body: dict[str, Any]) -> None:
        try:  # a listener that went away must not stop the step (nor srun's output)
            sock.send_multipart([b""] + envelope.seal(auth, kind, body), zmq.NOBLOCK)
        except zmq.ZMQError:
            pass

    def close(self) -> None:
        for sock, _ in self.peers:
            sock.close()
        try:
            os.rmdir(self.where)
        except OSError:
            pass
