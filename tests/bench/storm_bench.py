#!/usr/bin/env python3
"""A client storm (issue 17 item 4): many concurrent submitters and 1 Hz squeue pollers, real
Slurm and plurm back to back, in one run.

    python tests/bench/storm_bench.py [--seconds 60] [--submitters 64] [--pollers 32]
        [--plurm-conf SLURM_CONF] [--slurm-bin /usr/bin] [--no-slurm] [--no-plurm] [--json]
        [--max-submit-per-turn N]

For each system (the real Slurm's commands from ``--slurm-bin`` with PATH=/usr/sbin:/usr/bin:
/sbin:/bin; plurm's from this Python's bin folder, against a ``plurm cluster up --nodes 8
--cpus-per-node 4 --memory-per-node 2800`` cluster started in a temporary folder and stopped
after, or the one ``--plurm-conf`` names):

* ``--submitters`` threads each run ``sbatch --parsable -H -J storm<pid>_<sys> -o /dev/null
  --wrap true`` processes one after the other for ``--seconds``; every call's latency and
  outcome are kept: accepted (an id printed), accepted after the busy line ("Slurm temporarily
  unable to accept job, sleeping and retrying", or "Slurm job queue full ..."), refused busy (the command gave up with
  "Resource temporarily unavailable"), or another error (a timeout, a crash);
* ``--pollers`` threads each run plain ``squeue -h -n NAME -o "%i %t"`` once a second (the
  next call at once if one took longer than a second);
* a sampler reads the controller's (slurmctld's, plurmctld's) CPU time and RSS every 0.5 s
  (psutil): its CPU% over the storm (100% = one core) and its peak RSS;
* afterwards, once every sbatch has returned: the jobs named NAME (``squeue -t all``) against
  the ids the sbatch calls printed: ``lost`` (printed, not there) and ``unreported`` (there,
  no sbatch printed it: half-accepted) must both be 0.  The jobs are held, then cancelled.

Prints p50/p99 per command and system, the counts, the controller's figures and the
plurm/Slurm ratios (latency ratios < 1: plurm faster).  Standard library, psutil and plurm's
commands.  ``--seconds 10`` for a quick run.  Other users of the shared Slurm see its load
while this runs; its MaxJobCount (10,000 here) can refuse submissions in a long storm (that
is Slurm's busy path, counted as such).  ``--max-submit-per-turn N`` gives the started plurm
cluster that admission limit, to see the busy path under the storm.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
BUSY_LINES = ("temporarily unable to accept job", "job queue full", "controller not responding")
BUSY_FAIL = "Resource temporarily unavailable"
CALL_TIMEOUT_S = 180.0


class System:
    def __init__(self, name: str, bin_dir: Path, env: dict[str, str], ctld_pid: int | None) -> None:
        self.name = name
        self.bin_dir = bin_dir
        self.env = env
        self.ctld_pid = ctld_pid

    def run(self, cmd: str, *args: str, timeout: float = CALL_TIMEOUT_S) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.bin_dir / cmd), *args], env=self.env, capture_output=True, text=True,
                              timeout=timeout, check=False)


def percentile(values: list[float], share: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


class Storm:
    """One storm against one system; the results in ``self.*``."""

    def __init__(self, system: System, name: str, seconds: float, submitters: int, pollers: int) -> None:
        self.system, self.name, self.seconds = system, name, seconds
        self.submitters, self.pollers = submitters, pollers
        self.lock = threading.Lock()
        self.sbatch: list[tuple[float, str]] = []  # (latency s, outcome)
        self.squeue: list[tuple[float, bool]] = []  # (latency s, ok)
        self.printed: list[int] = []
        self.errors: dict[str, int] = {}  # first line of other errors -> count
        self.cpu_s = 0.0
        self.client_cpu_s = 0.0  # what the sbatch and squeue processes spent, all together
        self.rss_peak = 0
        self.wall = 0.0

    def _submit_loop(self, deadline: float) -> None:
        args = ["--parsable", "-H", "-J", self.name, "-o", "/dev/null", "--wrap", "true"]
        while time.monotonic() < deadline:
            began = time.monotonic()
            try:
                proc = self.system.run("sbatch", *args)
                rc, out, err = proc.returncode, proc.stdout, proc.stderr
            except subprocess.TimeoutExpired:
                rc, out, err = -1, "", f"no answer in {CALL_TIMEOUT_S:.0f} s"
            latency = time.monotonic() - began
            if rc == 0 and out.strip().split(";")[0].isdigit():
                outcome = "accepted_after_busy" if any(b in err for b in BUSY_LINES) else "accepted"
            elif BUSY_FAIL in err or any(b in err for b in BUSY_LINES):
                outcome = "refused_busy"
            else:
                outcome = "other_error"
            with self.lock:
                self.sbatch.append((latency, outcome))
                if outcome.startswith("accepted"):
                    self.printed.append(int(out.strip().split(";")[0]))
                elif outcome == "other_error":
                    line = (err.strip().splitlines() or [f"rc {rc}"])[-1][:160]
                    self.errors[line] = self.errors.get(line, 0) + 1

    def _poll_loop(self, deadline: float, offset: float) -> None:
        next_at = time.monotonic() + offset
        while True:
            time.sleep(max(0.0, next_at - time.monotonic()))
            if time.monotonic() >= deadline:
                return
            began = time.monotonic()
            try:
                ok = self.system.run("squeue", "-h", "-n", self.name, "-o", "%i %t").returncode == 0
            except subprocess.TimeoutExpired:
                ok = False
            with self.lock:
                self.squeue.append((time.monotonic() - began, ok))
            next_at = max(next_at + 1.0, time.monotonic())

    def _sample(self, stop: threading.Event) -> None:
        if self.system.ctld_pid is None:
            return
        proc = psutil.Process(self.system.ctld_pid)
        while not stop.wait(0.5):
            try:
                self.rss_peak = max(self.rss_peak, proc.memory_info().rss)
            except psutil.Error:
                return

    def run(self) -> None:
        proc = psutil.Process(self.system.ctld_pid) if self.system.ctld_pid else None
        cpu_before = sum(proc.cpu_times()[:2]) if proc else 0.0
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        stop = threading.Event()
        sampler = threading.Thread(target=self._sample, args=(stop,), daemon=True)
        sampler.start()
        began = time.monotonic()
        deadline = began + self.seconds
        threads = [threading.Thread(target=self._submit_loop, args=(deadline,), daemon=True)
                   for _ in range(self.submitters)]
        threads += [threading.Thread(target=self._poll_loop, args=(deadline, i / max(1, self.pollers)), daemon=True)
                    for i in range(self.pollers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.wall = time.monotonic() - began  # (to the end of the last call begun in time)
        stop.set()
        sampler.join()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.client_cpu_s = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
        if proc is not None:
            self.cpu_s = sum(proc.cpu_times()[:2]) - cpu_before
            self.rss_peak = max(self.rss_peak, proc.memory_info().rss)

    def existing(self) -> set[int]:
        out = self.system.run("squeue", "-h", "-t", "all", "-n", self.name, "-o", "%i")
        if out.returncode != 0:
            raise RuntimeError(f"{self.system.name}: squeue failed: {out.stderr.strip()}")
        return {int(word) for word in out.stdout.split() if word.isdigit()}

    def report(self) -> dict[str, Any]:
        existing = self.existing()
        printed = set(self.printed)
        outcomes = [o for _, o in self.sbatch]
        ok_sbatch = [lat * 1000 for lat, o in self.sbatch if o.startswith("accepted")]
        all_sbatch = [lat * 1000 for lat, _ in self.sbatch]
        squeue_ms = [lat * 1000 for lat, ok in self.squeue]
        return {
            "sbatch_calls": len(self.sbatch),
            "accepted": outcomes.count("accepted") + outcomes.count("accepted_after_busy"),
            "accepted_after_busy": outcomes.count("accepted_after_busy"),
            "refused_busy": outcomes.count("refused_busy"),
            "other_errors": outcomes.count("other_error"),
            "error_lines": self.errors,
            "accepted_per_s": (outcomes.count("accepted") + outcomes.count("accepted_after_busy")) / self.wall,
            "sbatch_p50_ms": percentile(all_sbatch, 0.5),
            "sbatch_p99_ms": percentile(all_sbatch, 0.99),
            "sbatch_accepted_p99_ms": percentile(ok_sbatch, 0.99),
            "sbatch_max_ms": max(all_sbatch, default=None),
            "squeue_calls": len(self.squeue),
            "squeue_errors": sum(1 for _, ok in self.squeue if not ok),
            "squeue_p50_ms": percentile(squeue_ms, 0.5),
            "squeue_p99_ms": percentile(squeue_ms, 0.99),
            "squeue_max_ms": max(squeue_ms, default=None),
            "ctld_cpu_percent": 100.0 * self.cpu_s / self.wall if self.wall else None,
            "ctld_rss_peak_mib": self.rss_peak / 2**20 if self.rss_peak else None,
            "client_cpu_ms_per_call": 1000 * self.client_cpu_s / max(1, len(self.sbatch) + len(self.squeue)),
            "load_average_1m": os.getloadavg()[0],
            "jobs_existing": len(existing),
            "lost": len(printed - existing),
            "unreported": len(existing - printed),
            "duplicate_ids_printed": len(self.printed) - len(printed),
            "wall_s": self.wall,
        }


def _plurm_bin() -> Path:
    return Path(sys.executable).parent


def _plurm_ctld_pid(conf: Path) -> int | None:
    """plurmctld's pid from slurm.conf's SlurmctldPidFile (as `plurm cluster up` writes it)."""
    for line in conf.read_text().splitlines():
        key, _, value = line.strip().partition("=")
        if key.lower() == "slurmctldpidfile":
            try:
                return int(Path(value.strip()).read_text().strip())
            except (OSError, ValueError):
                return None
    return None


def _slurm_ctld_pid() -> int | None:
    for proc in psutil.process_iter(["name"]):
        if proc.info["name"] == "slurmctld":
            return proc.pid
    return None


def _set_turn_limit(plurm: str, conf: Path, limit: int) -> None:
    subprocess.run([plurm, "cluster", "down", "--dir", str(conf.parent)], capture_output=True, timeout=180, check=True)
    lines = [line for line in conf.read_text().splitlines() if not line.startswith("SchedulerParameters=")]
    params = next((line for line in conf.read_text().splitlines() if line.startswith("SchedulerParameters=")),
                  "SchedulerParameters=")
    lines.append(f"{params}{',' if '=' in params[20:] else ''}max_submit_per_turn={limit}")
    conf.write_text("\n".join(lines) + "\n")
    subprocess.run([plurm, "cluster", "up", "--dir", str(conf.parent)], capture_output=True, timeout=180, check=True)


def _storm(system: System, args: argparse.Namespace) -> dict[str, Any]:
    name = f"storm{os.getpid()}_{system.name}"
    storm = Storm(system, name, args.seconds, args.submitters, args.pollers)
    print(f"storm: {system.name}: {args.submitters} submitters, {args.pollers} pollers, {args.seconds:g} s",
          file=sys.stderr, flush=True)
    try:
        storm.run()
        return storm.report()
    finally:
        system.run("scancel", "-n", name, timeout=300)


ROWS = [("sbatch p50", "sbatch_p50_ms", "ms"), ("sbatch p99", "sbatch_p99_ms", "ms"), ("sbatch max", "sbatch_max_ms", "ms"),
        ("squeue p50", "squeue_p50_ms", "ms"), ("squeue p99", "squeue_p99_ms", "ms"), ("squeue max", "squeue_max_ms", "ms"),
        ("accepted", "accepted_per_s", "jobs/s"), ("sbatch calls", "sbatch_calls", ""),
        ("accepted after busy", "accepted_after_busy", ""), ("refused busy", "refused_busy", ""),
        ("other errors", "other_errors", ""), ("squeue calls", "squeue_calls", ""),
        ("squeue errors", "squeue_errors", ""), ("controller CPU", "ctld_cpu_percent", "% of a core"),
        ("controller RSS peak", "ctld_rss_peak_mib", "MiB"),
        ("client CPU per call", "client_cpu_ms_per_call", "ms"), ("load average (1 min, after)", "load_average_1m", ""), ("jobs existing", "jobs_existing", ""),
        ("lost", "lost", ""), ("unreported (half-accepted)", "unreported", ""),
        ("duplicate ids printed", "duplicate_ids_printed", "")]
RATIO_KEYS = {"sbatch_p50_ms", "sbatch_p99_ms", "squeue_p50_ms", "squeue_p99_ms", "accepted_per_s",
              "ctld_cpu_percent", "ctld_rss_peak_mib", "client_cpu_ms_per_call"}


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.1f}" if isinstance(value, float) else str(value)


def print_table(results: dict[str, dict[str, Any]]) -> None:
    slurm, plurm = results.get("slurm", {}), results.get("plurm", {})
    print(f"{'metric':28} {'unit':12} {'slurm':>10} {'plurm':>10} {'plurm/slurm':>12}")
    for label, key, unit in ROWS:
        s, p = slurm.get(key), plurm.get(key)
        ratio = f"{p / s:.2f}" if key in RATIO_KEYS and isinstance(s, (int, float)) and s and \
            isinstance(p, (int, float)) else "-"
        print(f"{label:28} {unit:12} {_fmt(s):>10} {_fmt(p):>10} {ratio:>12}")
    for system, result in results.items():
        for line, count in sorted(result.get("error_lines", {}).items(), key=lambda kv: -kv[1])[:5]:
            print(f"  {system} error x{count}: {line}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--submitters", type=int, default=64)
    parser.add_argument("--pollers", type=int, default=32)
    parser.add_argument("--plurm-conf", type=Path)
    parser.add_argument("--slurm-bin", type=Path, default=Path("/usr/bin"))
    parser.add_argument("--no-slurm", action="store_true")
    parser.add_argument("--no-plurm", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--max-submit-per-turn", type=int, default=0,
                        help="the started plurm cluster's SchedulerParameters=max_submit_per_turn (0: none)")
    args = parser.parse_args()
    results: dict[str, dict[str, Any]] = {}
    if not args.no_slurm:
        env = dict(os.environ, PATH=SYSTEM_PATH)
        env.pop("SLURM_CONF", None)
        results["slurm"] = _storm(System("slurm", args.slurm_bin, env, _slurm_ctld_pid()), args)
    if not args.no_plurm:
        with tempfile.TemporaryDirectory(prefix="storm_") as tmp:
            conf = args.plurm_conf
            plurm = str(_plurm_bin() / "plurm")
            if conf is None:
                conf = Path(tmp) / "c" / "slurm.conf"
                subprocess.run([plurm, "cluster", "up", "--dir", str(conf.parent), "--nodes", "8",
                                "--cpus-per-node", "4", "--memory-per-node", "2800"],
                               capture_output=True, text=True, timeout=180, check=True)
                if args.max_submit_per_turn:  # admission control made to fire (corescheduler/admission.py)
                    _set_turn_limit(plurm, conf, args.max_submit_per_turn)
            env = dict(os.environ, SLURM_CONF=str(conf), PATH=f"{_plurm_bin()}:{SYSTEM_PATH}")
            try:
                results["plurm"] = _storm(System("plurm", _plurm_bin(), env, _plurm_ctld_pid(conf)), args)
            finally:
                if args.plurm_conf is None:
                    subprocess.run([plurm, "cluster", "down", "--dir", str(conf.parent)], capture_output=True,
                                   timeout=180)
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
    else:
        print_table(results)
    bad = [s for s, r in results.items() if r["lost"] or r["unreported"] or r["duplicate_ids_printed"]]
    if bad:
        print(f"storm: NOT every submission accepted or refused cleanly: {', '.join(bad)}", file=sys.stderr)
    return 1 if "plurm" in bad else 0


if __name__ == "__main__":
    sys.exit(main())
