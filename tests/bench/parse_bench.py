#!/usr/bin/env python3
"""How much reading batch scripts costs: a 200-line script, in process and per sbatch call.

    python tests/bench/parse_bench.py [--plurm-bin DIR] [--plurm-conf PATH] [--slurm-bin /usr/bin] [--runs 30]

Prints (name value unit): the in-process parse time of a 200-line script (100 directives,
100 commands), what importing the grammar modules adds to sbatch's start-up, and, when the
clusters are there, `sbatch -v --test-only` on the same script by plurm and by the real sbatch
(nothing is submitted).  Standard library only.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

DIRECTIVES = [
    "--job-name=bench", "--nodes=1", "--ntasks=2", "--cpus-per-task=1", "--mem-per-cpu=100",
    "--time=00:10:00", "--output=bench-%j.out", "--error=bench-%j.err", "--export=ALL", "--hold",
]


def script_200() -> str:
    lines = ["#!/bin/bash"]
    for i in range(100):
        lines.append(f"#SBATCH {DIRECTIVES[i % len(DIRECTIVES)]}  # directive {i}")
    for i in range(99):
        lines.append(f"echo step {i} \"$SLURM_JOB_ID\"")
    return "\n".join(lines) + "\n"


def in_process(path: str, runs: int) -> float:
    from plurm.tools.sbatch_cli import parse_sbatch

    parse_sbatch([path], {})  # warm
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        parse_sbatch([path], {})
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def import_cost(python: str) -> float:
    """Cumulative import time of the grammar modules sbatch loads (python -X importtime)."""
    proc = subprocess.run([python, "-X", "importtime", "-c", "import plurm.tools.sbatch_cli"],
                          capture_output=True, text=True)
    total = 0
    for line in proc.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[2].strip() in ("plurm.tools.sbatch_cli", "plurm.grammar.options"):
            total = max(total, int(parts[1]))
    return total / 1000


def command_median(argv: list[str], env: dict[str, str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plurm-bin", default=os.path.dirname(sys.executable))
    ap.add_argument("--plurm-conf", default=os.environ.get("SLURM_CONF"))
    ap.add_argument("--slurm-bin", default="/usr/bin")
    ap.add_argument("--slurm-conf", default="/etc/slurm/slurm.conf")
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "script200.sh")
        with open(path, "w") as handle:
            handle.write(script_200())
        print(f"parse_200_line_script_in_process {in_process(path, 200):.3f} ms")
        python = os.path.join(args.plurm_bin, "python")
        print(f"grammar_import_cost {import_cost(python if os.path.exists(python) else sys.executable):.2f} ms")
        argv_tail = ["-v", "--test-only", path]
        if args.plurm_conf:
            env = dict(os.environ, SLURM_CONF=args.plurm_conf)
            print(f"plurm_sbatch_v_test_only {command_median([os.path.join(args.plurm_bin, 'sbatch'), *argv_tail], env, args.runs):.2f} ms")
        real = os.path.join(args.slurm_bin, "sbatch")
        if os.path.exists(real) and os.path.exists(args.slurm_conf):
            env = dict(os.environ, SLURM_CONF=args.slurm_conf)
            print(f"slurm_sbatch_v_test_only {command_median([real, *argv_tail], env, args.runs):.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
