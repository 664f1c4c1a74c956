#!/usr/bin/env python3
"""Chaos figures: N short jobs on 8 nodes while plurmd processes, whole nodes and (twice) the
active controller are killed with -9 (tests/reliability/chaos.py says how).

Prints ``name value unit`` lines: jobs, kills, requeues, failover times (median, max), wall
time, problems (must be 0).  Needs root (a private PostgreSQL as the user plurmpg).
Run: ``python tests/bench/chaos_bench.py [--jobs 1000] [--seed S]``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from pgtest import start_postgres  # noqa: E402
from reliability import chaos  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    pg = start_postgres()
    base = Path(tempfile.mkdtemp(prefix="plurm-chaos-"))
    c = None
    try:
        c = chaos.start(pg, base)
        figures = chaos.run(c, base, jobs=args.jobs, seed=args.seed)
    finally:
        if c is not None:
            c.down()
        pg.close()
    for line in figures.lines():
        print(line)
    for problem in figures.problems[:50]:
        print(f"# problem: {problem}", file=sys.stderr)
    shutil.rmtree(base, ignore_errors=True) if not figures.problems else print(f"# kept {base}", file=sys.stderr)
    return 1 if figures.problems else 0


if __name__ == "__main__":
    sys.exit(main())
