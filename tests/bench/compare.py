#!/usr/bin/env python3
"""Run tests/bench/e2e.py against the real Slurm, then plurm, and print one comparison table.

  python tests/bench/compare.py --slurm-bin /usr/bin --plurm-bin DIR --plurm-conf DIR/slurm.conf [--markdown]

ratio = plurm / slurm for every metric: > 1 means plurm is faster for rates (unit */s) and
slower for latencies/times (ms, s); the `better` column says which side won. Saved e2e.py
--json outputs can stand in for either run (--slurm-json / --plurm-json), and --save-dir keeps
both. Standard library only.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
Metrics = dict[str, dict[str, Any]]


def run_e2e(label: str, bin_dir: str, env: list[str], passthru: list[str], limit_s: float) -> dict[str, Any]:
    argv = [sys.executable, os.path.join(HERE, "e2e.py"), "--bin-dir", bin_dir, "--json", *passthru]
    for pair in env:
        argv += ["--env", pair]
    print(f"compare: running {label}: {' '.join(argv)}", file=sys.stderr, flush=True)
    try:  # progress notes (stderr) pass straight through
        p = subprocess.run(argv, stdout=subprocess.PIPE, text=True, timeout=limit_s)
    except subprocess.TimeoutExpired:
        return {"metrics": {}, "errors": [f"{label}: e2e.py ran over {limit_s:.0f}s"]}
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError:
        return {"metrics": {}, "errors": [f"{label}: e2e.py rc {p.returncode}, no JSON output"]}


def fmt(v: Any) -> str:
    if v is None:
        return "-"
    return f"{v:g}" if isinstance(v, float) else str(v)


def rows(slurm: Metrics, plurm: Metrics) -> list[list[str]]:
    out = []
    for name in list(slurm) + [k for k in plurm if k not in slurm]:
        s = slurm.get(name, {}).get("value")
        p = plurm.get(name, {}).get("value")
        unit = (slurm.get(name) or plurm.get(name) or {}).get("unit", "")
        ratio, better = "-", ""
        if isinstance(s, (int, float)) and isinstance(p, (int, float)) and s:
            ratio = f"{p / s:.2f}"
            if p != s and (unit.endswith("/s") or unit in ("ms", "s")):
                higher_wins = unit.endswith("/s")
                better = "plurm" if (p > s) == higher_wins else "slurm"
        out.append([name, unit, fmt(s), fmt(p), ratio, better])
    return out


def render(table: list[list[str]], markdown: bool) -> str:
    head = ["metric", "unit", "slurm", "plurm", "ratio", "better"]
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] * 2 + ["---:"] * 3 + ["---"]) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in table]
        return "\n".join(lines)
    widths = [max(len(r[i]) for r in [head, *table]) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) if i < 2 or i == 5 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths))).rstrip()
                     for r in [head, *table])


def load(path: str) -> dict[str, Any]:
    with open(path) as f:
        return json.load(f)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--slurm-bin", default="/usr/bin")
    ap.add_argument("--slurm-conf", default="/etc/slurm/slurm.conf",
                    help="SLURM_CONF for the real Slurm ('' = unset)")
    ap.add_argument("--plurm-bin", help="plurm's bin dir (the Python bin dir)")
    ap.add_argument("--plurm-conf", help="SLURM_CONF printed by `plurm cluster up`")
    ap.add_argument("--plurm-env", action="append", default=[], metavar="KEY=VAL",
                    help="extra environment for plurm's commands; repeatable")
    ap.add_argument("--slurm-json", help="use this saved e2e.py --json output instead of running Slurm")
    ap.add_argument("--plurm-json", help="use this saved e2e.py --json output instead of running plurm")
    ap.add_argument("--save-dir", help="write slurm.json and plurm.json here")
    ap.add_argument("--markdown", action="store_true", help="print the table as markdown")
    for opt in ("--jobs", "--array", "--latency-runs", "--reps", "--fill"):
        ap.add_argument(opt, type=int, help="passed to e2e.py")
    ap.add_argument("--timeout", type=float, default=300.0, help="passed to e2e.py (per wait)")
    a = ap.parse_args(argv)
    if not a.plurm_json and not a.plurm_bin:
        ap.error("--plurm-bin (or --plurm-json) is required")

    passthru = ["--timeout", str(a.timeout)]
    for opt in ("jobs", "array", "latency_runs", "reps", "fill"):
        if getattr(a, opt) is not None:
            passthru += [f"--{opt.replace('_', '-')}", str(getattr(a, opt))]
    # e2e.py has ~6 bounded waits plus fixed work; past this something is badly wrong.
    limit_s = 6 * a.timeout + 600

    # Real Slurm first; SLURM_CONF is always set explicitly so an exported plurm one can't leak in.
    slurm = load(a.slurm_json) if a.slurm_json else run_e2e(
        "slurm", a.slurm_bin, [f"SLURM_CONF={a.slurm_conf}"], passthru, limit_s)
    plurm_env = ([f"SLURM_CONF={a.plurm_conf}"] if a.plurm_conf else []) + a.plurm_env
    plurm = load(a.plurm_json) if a.plurm_json else run_e2e(
        "plurm", a.plurm_bin, plurm_env, passthru, limit_s)
    if a.save_dir:
        os.makedirs(a.save_dir, exist_ok=True)
        for name, res in (("slurm", slurm), ("plurm", plurm)):
            with open(os.path.join(a.save_dir, f"{name}.json"), "w") as f:
                json.dump(res, f, indent=1)

    if slurm.get("params") and plurm.get("params") and slurm["params"] != plurm["params"]:
        print(f"compare: warning: different parameters: slurm {slurm['params']} plurm {plurm['params']}",
              file=sys.stderr)
    print(render(rows(slurm.get("metrics", {}), plurm.get("metrics", {})), a.markdown))
    errors = [f"slurm: {e}" for e in slurm.get("errors", [])] + [f"plurm: {e}" for e in plurm.get("errors", [])]
    for e in errors:
        print(f"compare: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
