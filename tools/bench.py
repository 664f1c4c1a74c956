"""`plurm bench`: run the repository's benchmarks (tests/bench/) from the command line.

    plurm bench e2e [e2e.py options]      against the cluster SLURM_CONF names (default: the local one)
    plurm bench scheduler [--nodes N] [--jobs J] [--json]   one full scheduling pass, compiled and pure

The harnesses live in tests/bench/ (not installed with the package): this
command finds them in the checkout an editable install points to.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _bench_dir() -> Path | None:
    here = Path(__file__).resolve().parents[1]
    candidate = here / "tests" / "bench"
    return candidate if candidate.is_dir() else None


def run_bench(what: str, rest: list[str]) -> int:
    bench = _bench_dir()
    if bench is None:
        print("plurm bench: the benchmarks live in the source checkout (tests/bench/); "
              "install with `pip install -e .` from a checkout to run them", file=sys.stderr)
        return 1
    if what == "e2e":
        from plurm.wire.client import conf_path

        argv = [sys.executable, str(bench / "e2e.py"), "--bin-dir", str(Path(sys.executable).parent),
                "--env", f"SLURM_CONF={conf_path()}", *rest]
        return subprocess.call(argv, env=dict(os.environ))
    if what == "scheduler":
        return subprocess.call([sys.executable, str(bench / "scheduler_bench.py"), *rest])
    print(f"plurm bench: unknown benchmark {what}", file=sys.stderr)
    return 2
