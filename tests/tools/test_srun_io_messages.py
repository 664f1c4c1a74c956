"""srun's and sattach's receiver (tools/srun_io.py ``step_messages``) keeps only what the step's
plurmstepd signed with the step's I/O key; anything else on the socket is dropped, never raised."""

from __future__ import annotations

import json
import time

import zmq

from plurm.tools.srun_io import step_messages
from plurm.wire import envelope
from plurm.wire.auth import KeyAuth, new_key


def test_only_signed_json_objects_come_through() -> None:
    ctx = zmq.Context()
    router, dealer = ctx.socket(zmq.ROUTER), ctx.socket(zmq.DEALER)
    try:
        for sock in (router, dealer):
            sock.setsockopt(zmq.LINGER, 0)
        port = router.bind_to_random_port("tcp://127.0.0.1")
        dealer.connect(f"tcp://127.0.0.1:{port}")
        step, other = KeyAuth(new_key()), KeyAuth(new_key())
        dealer.send_multipart([b""] + envelope.seal(other, "task_output", {"task": 0}))  # another key
        dealer.send_multipart([b"not", b"an", b"envelope"])
        dealer.send_multipart([b""])  # too few frames
        dealer.send_multipart([b""] + envelope.seal_raw(step, "task_output", json.dumps([1, 2]).encode()))
        dealer.send_multipart([b""] + envelope.seal_raw(step, "task_output", b"{not json"))
        dealer.send_multipart([b""] + envelope.seal(step, "node_done", {"node": "n1"}))
        got: list = []
        deadline = time.monotonic() + 10
        while not got and time.monotonic() < deadline:
            router.poll(200)
            got += step_messages(router, step)
        assert [(kind, body) for _, kind, body in got] == [("node_done", {"node": "n1"})]
        assert isinstance(got[0][0], bytes) and got[0][0]  # the sender's routing id, for replies
    finally:
        router.close()
        dealer.close()
        ctx.term()
