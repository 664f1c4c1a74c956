"""scontrol driven in-process with canned controller replies (for the tool-level tests)."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

from plurm.tools import scontrol
from plurm.wire.client import ClientError


class FakeScontrol(scontrol.Scontrol):
    """Each request is answered from ``replies`` by message type (a ClientError is raised);
    what was sent is kept in ``sent``."""

    def __init__(self, replies: dict | None = None) -> None:
        super().__init__()
        self.replies = replies or {}
        self.sent: list[tuple[str, dict]] = []

    def request(self, msg_type: str, body: dict) -> dict:
        self.sent.append((msg_type, body))
        reply = self.replies[msg_type]
        if isinstance(reply, ClientError):
            raise reply
        return reply


def run(sc: scontrol.Scontrol, *words: str | list[str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of one scontrol command line (words, or one list of them)."""
    line = list(words[0]) if len(words) == 1 and isinstance(words[0], list) else list(words)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = sc.run_words(line)
    return rc, out.getvalue(), err.getvalue()
