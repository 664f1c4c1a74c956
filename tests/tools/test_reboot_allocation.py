"""srun and salloc with ``--reboot`` (tools/allocation.py): srun's allocation is granted once
its nodes are back, salloc's at once; srun's words when they do not come back are 22.05's
(tests/integration/reference/reboot/anchor_interactive_reboot.txt)."""

from __future__ import annotations

from pathlib import Path

import pytest

from plurm.tools import allocation

REFERENCE = Path(__file__).parents[1] / "integration" / "reference" / "reboot" / "anchor_interactive_reboot.txt"


class Replies:
    """A connection whose job_info answers are the given records, one per call."""

    def __init__(self, *jobs: dict) -> None:
        self.jobs = list(jobs)

    def request(self, kind: str, body: dict) -> dict:
        assert kind == "job_info"
        return {"jobs": [self.jobs.pop(0) if len(self.jobs) > 1 else self.jobs[0]]}


BOOTING = {"job_id": 5, "state": "RUNNING", "configuring": True, "nodes": ["n3"]}


def test_srun_waits_for_the_nodes_salloc_does_not() -> None:
    ready = {"job_id": 5, "state": "RUNNING", "nodes": ["n3"]}
    conn = Replies(BOOTING, BOOTING, ready)
    assert allocation._wait_running(conn, 5, "srun", None, False) == ready and conn.jobs == [ready]
    assert allocation._wait_running(Replies(BOOTING, ready), 5, "salloc", None, False) == BOOTING


def test_srun_when_the_nodes_do_not_come_back() -> None:
    failed = {"job_id": 5, "state": "NODE_FAIL", "nodes": ["n3"]}
    with pytest.raises(allocation.AllocationError) as err:
        allocation._wait_running(Replies(BOOTING, failed), 5, "srun", None, False)
    assert str(err.value) == ("srun: error: Node failure on n3\nsrun: error: Nodes n3 are still not ready\n"
                              "srun: error: Something is wrong with the boot of the nodes.")
    assert str(err.value) in REFERENCE.read_text()
