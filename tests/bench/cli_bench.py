#!/usr/bin/env python3
"""sbatch and squeue, one process per call, against the real Slurm's C commands (issue 17 item 2).

  python tests/bench/cli_bench.py [--plurm-bin DIR] [--plurm-conf SLURM_CONF] [--slurm-bin /usr/bin]
                                  [--sbatch 100] [--small 1000] [--large 100000] [--slurm-large 5000]
                                  [--reps 10] [--large-reps 5] [--no-slurm] [--json]

In one run, plurm's and the real Slurm's calls interleaved (one each in turn, so that both
meet the same load on a shared machine):

* ``sbatch``: ``--sbatch`` sequential ``sbatch --hold -J cli_<pid>sb --wrap true -o /dev/null``
  processes, each timed from fork to exit (mean and median);
* ``squeue (small)``: with ``--small`` of this run's held jobs queued (filled by
  ``plurm.api.submit_many`` on plurm, by more ``sbatch`` processes on Slurm), ``--reps`` plain
  ``squeue`` calls, mean and median, and how many lines they printed;
* ``squeue (large)``: the same with ``--large`` queued on plurm and ``--slurm-large`` on Slurm
  (its MaxJobCount is 10,000 here and the Slurm is shared by other sessions: the default
  leaves them room; what it held is printed);

then the ratios plurm/Slurm, and a breakdown of plurm's figures: the bare interpreter
(``python -I -S -c pass``, ``python -c pass``), the imports (``python -X importtime``,
minimum of 5 runs, summed over plurm's top-level imports and ``site``), the round trip in
process (connect, seal, send, reply, open: ``ping`` and one held ``submit_job``), and for
squeue at each size the reply's size, its receipt+decode and the formatting.

Without ``--plurm-conf`` it starts a local cluster (``plurm cluster up``, 8 x 4 CPUs) in a
temporary folder and stops it after.  Jobs are all held (nothing runs) and cancelled at the
end, on both sides, also after a failure.  Real Slurm runs with ``PATH=/usr/sbin:/usr/bin:
/sbin:/bin``.  Standard library and plurm only; nothing here is collected by pytest.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

SLURM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
TAG = f"cli_{os.getpid()}"


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    """One run's wall time (ms, fork to exit) and its stdout; a failure raises."""
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    elapsed = (time.perf_counter() - t0) * 1000
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed ({proc.returncode}): {proc.stderr.decode()[-400:]}")
    return elapsed, proc.stdout.decode()


def _timed(cmd: list[str], env: dict[str, str], runs: int) -> tuple[list[float], str]:
    """Wall times (ms) of ``runs`` sequential runs of ``cmd``, and the last run's stdout."""
    times, out = [], ""
    for _ in range(runs):
        elapsed, out = _run(cmd, env)
        times.append(elapsed)
    return times, out


def _interleaved(cmds: list[tuple[list[str], dict[str, str]]], runs: int) -> list[tuple[list[float], str]]:
    """Each command once in turn, ``runs`` rounds: both sides meet the same load on a shared
    machine (a load that swings 5x within minutes here made one-side-then-the-other unfair)."""
    times: list[list[float]] = [[] for _ in cmds]
    outs = [""] * len(cmds)
    for _ in range(runs):
        for i, (cmd, env) in enumerate(cmds):
            elapsed, outs[i] = _run(cmd, env)
            times[i].append(elapsed)
    return list(zip(times, outs))


def _stats(prefix: str, times: list[float], figures: dict[str, float]) -> None:
    figures[f"{prefix}_mean_ms"] = statistics.mean(times)
    figures[f"{prefix}_median_ms"] = statistics.median(times)


class Side:
    """One workload manager's commands: where they are and the environment they run in."""

    def __init__(self, name: str, bindir: str, env: dict[str, str]) -> None:
        self.name, self.bindir, self.env = name, bindir, env

    def cmd(self, name: str, *args: str) -> list[str]:
        return [os.path.join(self.bindir, name), *args]

    def sbatch_cmd(self, suffix: str) -> list[str]:
        return self.cmd("sbatch", "--hold", "-J", f"{TAG}{suffix}", "--wrap", "true", "-o", "/dev/null")

    def queued(self) -> int:
        out = subprocess.run(self.cmd("squeue", "-h", "-o", "%i"), env=self.env, capture_output=True, text=True)
        return len(out.stdout.splitlines())

    def cancel(self) -> None:
        for suffix in ("sb", "fill"):
            subprocess.run(self.cmd("scancel", "-n", f"{TAG}{suffix}"), env=self.env, capture_output=True)


def measure_sides(sides: list[tuple[Side, int, Any]], args: argparse.Namespace) -> list[dict[str, float]]:
    """sbatch, then squeue at ``--small`` and at each side's large size, the sides interleaved.
    ``sides``: (side, its large size, its fill(count))."""
    figures: list[dict[str, float]] = [{} for _ in sides]
    print(f"{args.sbatch} sbatch on each side, interleaved", file=sys.stderr, flush=True)
    for fig, (times, _) in zip(figures, _interleaved([(s.sbatch_cmd("sb"), s.env) for s, _, _ in sides],
                                                      args.sbatch)):
        _stats("sbatch", times, fig)
    mine = [args.sbatch] * len(sides)
    for fig, (side, _, _) in zip(figures, sides):
        fig["queued_before"] = side.queued() - args.sbatch  # other sessions' jobs, on a shared Slurm
    for label in ("small", "large"):
        for i, (side, large, fill) in enumerate(sides):
            target = args.small if label == "small" else large
            print(f"{side.name}: filling to {target} of this run's jobs", file=sys.stderr, flush=True)
            if target > mine[i]:
                fill(target - mine[i])
                mine[i] = target
            figures[i][f"{label}_jobs"] = mine[i]
        reps = args.reps if label == "small" else args.large_reps
        for fig, (times, out) in zip(figures, _interleaved([(s.cmd("squeue"), s.env) for s, _, _ in sides], reps)):
            _stats(f"squeue_{label}", times, fig)
            fig[f"squeue_{label}_lines"] = len(out.splitlines())
    return figures


# ----------------------------------------------------------------------------- plurm
def _plurm_fill(conf: str):
    def fill(count: int) -> None:
        from plurm import api
        from plurm.wire.client import ClientError

        body = api.prepare(wrap="true", args=["--hold", "-J", f"{TAG}fill", "-o", "/dev/null"],
                           environ={k: os.environ[k] for k in ("PATH", "HOME", "USER") if k in os.environ})
        with api.Client(conf, timeout=300) as client:
            for start in range(0, count, 10_000):
                for _ in range(60):  # a Busy refusal records nothing (corescheduler/admission.py): again
                    try:
                        results = client.submit_many([body] * min(10_000, count - start))
                        break
                    except ClientError as exc:
                        if exc.code != "Busy":
                            raise
                        time.sleep(1)
                else:
                    raise RuntimeError("the controller stayed busy for a minute")
                bad = [r.error for r in results if r.error]
                if bad:
                    raise RuntimeError(f"submit_many refused {len(bad)}: {bad[:3]}")
    return fill


def _import_breakdown(side: Side, runs: int = 5) -> dict[str, float]:
    """Minimum over ``runs`` of ``-X importtime`` for sbatch and squeue: site, plurm, the rest."""
    figures: dict[str, float] = {}
    line = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \| ( *)(\S+)")
    for command, args in (("sbatch", side.sbatch_cmd("sb")[1:]), ("squeue", [])):
        best: dict[str, float] = {}
        for _ in range(runs):
            launcher = side.cmd(command)[0]
            proc = subprocess.run([_interpreter(launcher), "-X", "importtime", launcher, *args], env=side.env,
                                  capture_output=True, text=True)
            seen: dict[str, float] = {}
            for m in line.finditer(proc.stderr):
                if not m[3]:  # top level: its cumulative time covers what it imported
                    key = "site" if m[4] == "site" else "plurm" if m[4].startswith("plurm") else "other"
                    seen[key] = seen.get(key, 0.0) + int(m[2]) / 1000
            for key, value in seen.items():
                best[key] = min(best.get(key, value), value)
        for key, value in best.items():
            figures[f"imports_{command}_{key}_ms"] = value
    return figures


def _interpreter(launcher: str) -> str:
    with open(launcher, "rb") as handle:
        first = handle.readline().decode().strip()
    return first[2:].split()[0] if first.startswith("#!") else sys.executable


def _inprocess_breakdown(conf: str) -> dict[str, float]:
    """The round trip and squeue's decode and formatting, in this process (no start-up)."""
    import gc

    from plurm import api
    from plurm.tools import squeue, squeuefmt
    from plurm.wire import bigjson, client, lightjson

    figures: dict[str, float] = {}
    settings = client.read_settings(conf)
    n = 30
    t0 = time.perf_counter()
    for _ in range(n):
        client.request("ping", {}, settings)
    figures["roundtrip_ping_ms"] = (time.perf_counter() - t0) / n * 1000
    body = api.prepare(wrap="true", args=["--hold", "-J", f"{TAG}sb", "-o", "/dev/null"])
    t0 = time.perf_counter()
    for _ in range(n):
        client.request("submit_job", body, settings)
    figures["roundtrip_submit_ms"] = (time.perf_counter() - t0) / n * 1000
    t0 = time.perf_counter()
    for _ in range(n):
        api.prepare(wrap="true", args=["--hold", "-J", f"{TAG}sb", "-o", "/dev/null"])
    figures["sbatch_parse_build_ms"] = (time.perf_counter() - t0) / n * 1000
    opts = squeue.parse_args([])
    conn = client.Connection(settings, timeout=120)
    try:
        t0 = time.perf_counter()
        _, raw = conn.request_raw("job_info", squeue._request_body(opts))
        t1 = time.perf_counter()
        gc.disable()  # (as squeue: tools/squeue.py main)
        reply = (bigjson.loads if len(raw) >= client.LARGE_REPLY else lightjson.loads)(raw)
        t2 = time.perf_counter()
        ctx = squeuefmt.Context(reply.get("now") or time.time(), None, cluster=reply.get("cluster", ""))
        text = squeuefmt.format_jobs(reply.get("jobs", []), opts, ctx)
        t3 = time.perf_counter()
    finally:
        gc.enable()
        conn.close()
    figures["job_info_jobs"] = len(reply.get("jobs", []))
    figures["job_info_reply_bytes"] = len(raw)
    figures["job_info_request_ms"] = (t1 - t0) * 1000
    figures["job_info_decode_ms"] = (t2 - t1) * 1000
    figures["squeue_sort_format_ms"] = (t3 - t2) * 1000
    figures["squeue_output_bytes"] = len(text)
    return figures


def _compile(side: Side) -> None:
    """Write the commands' bytecode first, as ``pip install`` does: with PYTHONDONTWRITEBYTECODE
    set (as on this project's machines) an edited module's stale .pyc is never rewritten, and
    each run compiles it from source again (wire/client.py alone: +6 ms a start)."""
    code = ("import compileall, os, plurm; d = os.path.dirname(plurm.__file__); "
            "[compileall.compile_dir(os.path.join(d, s), quiet=1) for s in ('tools', 'wire', 'common', 'grammar', 'api')]; "
            "compileall.compile_file(os.path.join(d, '__init__.py'), quiet=1)")
    subprocess.run([_interpreter(side.cmd("squeue")[0]), "-c", code], env=side.env, check=True, capture_output=True)


def plurm_startup(side: Side) -> dict[str, float]:
    """Where plurm's start-up goes: the interpreter, the imports (before any fill: squeue at
    100,000 jobs imports msgspec for the reply, wire/bigjson.py)."""
    print("plurm: start-up breakdown", file=sys.stderr, flush=True)
    figures = _bare_interpreter(side)
    figures.update(_import_breakdown(side))
    return figures


def _bare_interpreter(side: Side) -> dict[str, float]:
    python = _interpreter(side.cmd("squeue")[0])
    figures: dict[str, float] = {}
    for key, flags in (("python_isolated", ["-I", "-S"]), ("python_default", [])):
        times, _ = _timed([python, *flags, "-c", "pass"], side.env, 20)
        figures[f"{key}_mean_ms"] = statistics.mean(times)
    return figures


# ----------------------------------------------------------------------------- Slurm
def _slurm_fill(side: Side):
    def fill(count: int) -> None:
        cmd = side.sbatch_cmd("fill")
        with ThreadPoolExecutor(4) as pool:  # 4 at once: a fill, not a figure
            codes = list(pool.map(lambda _: subprocess.run(cmd, env=side.env, capture_output=True).returncode,
                                  range(count)))
        refused = sum(1 for c in codes if c)
        if refused:
            print(f"slurm: {refused} of {count} fill submissions refused (MaxJobCount?)", file=sys.stderr)
    return fill


def slurm_side(args: argparse.Namespace) -> Side:
    env = {k: v for k, v in os.environ.items() if k != "SLURM_CONF"}  # (plurm's: Slurm reads /etc/slurm)
    return Side("slurm", args.slurm_bin, dict(env, PATH=SLURM_PATH))


# ----------------------------------------------------------------------------- report
def report(plurm: dict[str, float], slurm: dict[str, float] | None, args: argparse.Namespace) -> None:
    def row(what: str, key: str, jobs_key: str | None = None) -> None:
        p = plurm.get(key)
        s = slurm.get(key) if slurm else None
        pj = f" ({int(plurm[jobs_key]):,} mine)" if jobs_key else ""
        sj = f" ({int(slurm[jobs_key]):,} mine)" if jobs_key and slurm else ""
        ratio = f"{p / s:6.2f}x" if p is not None and s else "     -"
        print(f"| {what:38s} | {p:8.2f}{pj:>14s} | {(s or 0):8.2f}{sj:>14s} | {ratio} |")

    print(f"| {'ms (plurm / Slurm = ratio)':38s} | {'plurm':>23s} | {'Slurm':>23s} | ratio  |")
    print("|---|---:|---:|---:|")
    row(f"sbatch, held, mean of {args.sbatch}", "sbatch_mean_ms")
    row("sbatch, median", "sbatch_median_ms")
    row(f"squeue, mean of {args.reps}", "squeue_small_mean_ms", "small_jobs")
    row("squeue, median", "squeue_small_median_ms", "small_jobs")
    row(f"squeue large, mean of {args.large_reps}", "squeue_large_mean_ms", "large_jobs")
    row("squeue large, median", "squeue_large_median_ms", "large_jobs")
    if slurm:
        print(f"(queued by others before: plurm {int(plurm['queued_before'])}, Slurm {int(slurm['queued_before'])};"
              f" squeue lines: plurm {int(plurm['squeue_large_lines'])}, Slurm {int(slurm['squeue_large_lines'])})")
        if slurm["large_jobs"] < plurm["large_jobs"]:
            print("(at different sizes the large ratio is not like for like: Slurm's per-job figure is "
                  f"{(slurm['squeue_large_mean_ms'] - slurm['squeue_small_mean_ms']) / max(1, slurm['large_jobs'] - slurm['small_jobs']) * 1000:.2f} us/job, "
                  f"plurm's {(plurm['squeue_large_mean_ms'] - plurm['squeue_small_mean_ms']) / max(1, plurm['large_jobs'] - plurm['small_jobs']) * 1000:.2f} us/job)")
    print("\nplurm's breakdown (ms)")
    for key in sorted(k for k in plurm if not k.startswith(("sbatch_m", "squeue_small", "squeue_large", "small", "large",
                                                             "queued"))):
        print(f"  {key:36s} {plurm[key]:12.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plurm-bin", default=str(Path(sys.executable).parent))
    parser.add_argument("--plurm-conf", help="an up cluster's slurm.conf (default: start one)")
    parser.add_argument("--slurm-bin", default="/usr/bin")
    parser.add_argument("--no-slurm", action="store_true")
    parser.add_argument("--sbatch", type=int, default=100)
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--large", type=int, default=100_000)
    parser.add_argument("--slurm-large", type=int, default=5000)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--large-reps", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    def measure(conf: str) -> tuple[dict[str, float], dict[str, float] | None]:
        plurm = Side("plurm", args.plurm_bin, dict(os.environ, SLURM_CONF=conf))
        _compile(plurm)
        sides = [(plurm, args.large, _plurm_fill(conf))]
        if not args.no_slurm:
            slurm = slurm_side(args)
            sides.append((slurm, args.slurm_large, _slurm_fill(slurm)))
        try:
            startup = plurm_startup(plurm)
            figures = measure_sides(sides, args)
            figures[0].update(startup)
            figures[0].update(_inprocess_breakdown(conf))  # (at the large size)
        finally:
            for side, _, _ in sides:
                side.cancel()
        return figures[0], figures[1] if len(figures) > 1 else None

    if args.plurm_conf:
        plurm, slurm = measure(args.plurm_conf)
    else:
        plurm_cmd = str(Path(sys.executable).parent / "plurm")  # (the daemons: this interpreter's plurm)
        with tempfile.TemporaryDirectory(prefix="clibench") as tmp:
            directory = Path(tmp) / "cluster"
            subprocess.run([plurm_cmd, "cluster", "up", "--dir", str(directory), "--nodes", "8",
                            "--cpus-per-node", "4", "--memory-per-node", "2800"], check=True, capture_output=True)
            try:
                plurm, slurm = measure(str(directory / "slurm.conf"))
            finally:
                subprocess.run([plurm_cmd, "cluster", "down", "--dir", str(directory)], capture_output=True)
    if args.json:
        print(json.dumps({"plurm": plurm, "slurm": slurm}))
    else:
        report(plurm, slurm, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
