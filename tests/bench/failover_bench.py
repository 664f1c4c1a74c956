#!/usr/bin/env python3
"""How long the cluster is without a controller when the active one fails.

Two controllers (ctl1 127.0.0.1, ctl2 127.0.0.2) on a private PostgreSQL (tests/pgtest.py),
two nodes, SlurmctldTimeout=T (default 5 s).  Each round, with a job running:

* **kill -9** of the active primary: the time from the kill until an ``sbatch`` (the real
  command, trying both addresses) is accepted by the backup.  The standby takes over as soon
  as it sees the primary's database session gone, without waiting out the lease.
* the primary restarted (``plurm cluster up``): the time until it holds control again
  (the backup hands back at its next renewal).
* every ``--stop-every``-th round, **SIGSTOP** instead of kill -9: the session stays, so the
  standby waits for the lease to expire (about T); then SIGCONT, the old primary is fenced.

``--chaos S``: instead, for S seconds, kill -9 whichever controller is active every 1.5-4 s and
start it again 0-2 s later, while a thread submits jobs in a loop; then every job whose sbatch
printed an id must complete, and no id may be handed out twice.

Prints ``name value unit`` lines (median and max over the rounds).  Needs root (the private
PostgreSQL runs as the user plurmpg).  Run: ``python tests/bench/failover_bench.py [--rounds N]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from failover.test_standby import BACKUP, PRIMARY, active, pid  # noqa: E402
from pgtest import start_postgres  # noqa: E402
from plurmtest import Cluster, wait_for  # noqa: E402


def _sbatch_ok(c: Cluster, workdir: Path) -> bool:
    return c.run("sbatch", "--parsable", "--wrap", "true", cwd=workdir).returncode == 0


def _until(predicate, limit: float = 120.0) -> float:
    started = time.monotonic()
    wait_for(predicate, timeout=limit, what="the cluster to answer")
    return time.monotonic() - started


def _chaos(c: Cluster, workdir: Path, seconds: float) -> int:
    import random
    import threading

    accepted: list[int] = []
    refused: list[str] = []
    done = threading.Event()

    def submit() -> None:
        while not done.is_set():
            proc = c.run("sbatch", "--parsable", "--wrap", "sleep 0.5", cwd=workdir)
            if proc.returncode == 0:
                accepted.append(int(proc.stdout.strip().split(";")[0]))
            else:
                refused.append(proc.stderr.strip())

    thread = threading.Thread(target=submit)
    thread.start()
    kills = 0
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            time.sleep(random.uniform(1.5, 4.0))
            os.kill(pid(c, "plurmctld" if active(c, PRIMARY) else "plurmctld-ctl2"), signal.SIGKILL)
            kills += 1
            time.sleep(random.uniform(0.0, 2.0))
            c.up()
    finally:
        done.set()
        thread.join()
    lost = []
    for job_id in accepted:
        try:
            c.wait_state(job_id, "COMPLETED", timeout=120)
        except AssertionError:
            lost.append(job_id)
    print(f"chaos_seconds {seconds:.0f} s")
    print(f"chaos_kills {kills} n")
    print(f"chaos_accepted {len(accepted)} n")
    print(f"chaos_refused {len(refused)} n")
    print(f"chaos_not_completed {len(lost)} n")
    print(f"chaos_duplicate_ids {len(accepted) - len(set(accepted))} n")
    for line in sorted(set(refused)):
        print(f"# refused: {line}", file=sys.stderr)
    return 1 if lost or len(accepted) != len(set(accepted)) else 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--timeout", type=int, default=5, help="SlurmctldTimeout (s)")
    parser.add_argument("--stop-every", type=int, default=3, help="every Nth round is a SIGSTOP (0: none)")
    parser.add_argument("--chaos", type=float, default=0.0, help="seconds of random kill -9 under load instead")
    args = parser.parse_args()
    pg = start_postgres()
    base = Path(tempfile.mkdtemp(prefix="plurm-failover-bench-"))
    directory = base / "cluster"
    env = dict(os.environ, SLURM_CONF=str(directory / "slurm.conf"))
    env.pop("SLURM_JOB_ID", None)
    c = Cluster(directory, directory / "slurm.conf", env)
    workdir = base / "work"
    workdir.mkdir()
    kills: list[float] = []
    stops: list[float] = []
    handbacks: list[float] = []
    try:
        url = pg.create_database(f"b_{uuid.uuid4().hex[:8]}")
        c.up("--nodes", "2", "--cpus-per-node", "2", "--controllers", "2", "--state", url,
             "--slurmctld-timeout", str(args.timeout))
        wait_for(lambda: active(c, PRIMARY), timeout=60, what="the primary")
        if args.chaos:
            return _chaos(c, workdir, args.chaos)
        for round_no in range(1, args.rounds + 1):
            running = c.sbatch("--wrap", "sleep 30", cwd=workdir)
            c.wait_state(running, "RUNNING")
            primary = pid(c, "plurmctld")
            stop = args.stop_every and round_no % args.stop_every == 0
            os.kill(primary, signal.SIGSTOP if stop else signal.SIGKILL)
            took = _until(lambda: _sbatch_ok(c, workdir))
            (stops if stop else kills).append(took)
            assert c.job(running)["state"] == "RUNNING", "the running job was disturbed"
            if stop:
                os.kill(primary, signal.SIGCONT)
                wait_for(lambda: active(c, PRIMARY) is False and active(c, BACKUP), what="the old primary to step down")
                os.kill(primary, signal.SIGTERM)
                wait_for(lambda: not Path(f"/proc/{primary}").exists()
                         or "Z" in Path(f"/proc/{primary}/stat").read_text().split()[2], what="the old primary to exit")
            started = time.monotonic()
            c.up()
            wait_for(lambda: active(c, PRIMARY), timeout=60, what="the hand-back")
            handbacks.append(time.monotonic() - started)
            c.run("scancel", str(running))
            print(f"round {round_no}: {'SIGSTOP' if stop else 'kill -9'} {took:.2f} s, "
                  f"hand-back {handbacks[-1]:.2f} s", file=sys.stderr)
    finally:
        for name in ("plurmctld", "plurmctld-ctl2"):
            try:
                os.kill(pid(c, name), signal.SIGCONT)
            except (OSError, ValueError):
                pass
        c.down()
        pg.close()
        shutil.rmtree(base, ignore_errors=True)
    print(f"slurmctld_timeout {args.timeout} s")
    for name, values in (("failover_kill9", kills), ("failover_sigstop", stops), ("handback_restart", handbacks)):
        if values:
            print(f"{name}_median {statistics.median(values):.2f} s")
            print(f"{name}_max {max(values):.2f} s")
            print(f"{name}_rounds {len(values)} n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
