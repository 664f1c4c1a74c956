"""1,000 short jobs on 8 nodes while node daemons, whole nodes and the controller die (slow).

The driver is tests/reliability/chaos.py; tests/bench/chaos_bench.py prints its figures
(docs/reliability.md).  Every job must end COMPLETED, directly or after requeue; none lost,
none run twice at once (each run's ledger), every requeue in sacct.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reliability import chaos

pytestmark = pytest.mark.slow


def test_chaos_every_job_completes_once(postgres, tmp_path: Path) -> None:
    jobs = int(os.environ.get("PLURM_CHAOS_JOBS", "1000"))
    c = chaos.start(postgres, tmp_path)
    try:
        figures = chaos.run(c, tmp_path, jobs=jobs)
    finally:
        c.down()
    print("\n".join(figures.lines()))
    assert figures.problems == []
    assert figures.jobs == jobs
    assert figures.plurmd_kills + figures.node_crashes > 0 and figures.controller_kills == 2
