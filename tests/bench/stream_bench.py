#!/usr/bin/env python3
"""The controller's CPU: 50 clients watching the event stream against 50 clients polling the
queue every second (issue 16 item 4), with the same jobs flowing, in one run.

A local cluster (plurm cluster up); a submitter sends ``--rate`` trivial jobs a second for
``--seconds`` in each phase; the controller's CPU time (psutil, user + system, of the
plurmctld pid) is read before and after each phase:

* ``watch``: ``--clients`` subscriptions (plurm.wire.journal_client), each read by its own
  thread as events come;
* ``poll``: ``--clients`` threads each sending a ``job_info`` request (what ``squeue`` asks)
  every second, on a connection of its own.

Both client sides run in this process, so the figures are the controller's alone (a real
squeue would add its own start-up, on the client's CPU).  Prints ``name value unit`` lines and
the ratio.  Run: ``python tests/bench/stream_bench.py`` (or ``pytest -m bench``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from plurmtest import command  # noqa: E402


def controller_cpu(pid: int) -> float:
    import psutil

    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def submitter(conf: str, rate: float, stop: threading.Event, count: list[int]) -> None:
    """Jobs flowing: ``rate`` held-free trivial jobs a second through the API's submit."""
    from plurm import api

    settings_conf = conf
    while not stop.is_set():
        began = time.monotonic()
        api.submit("#!/bin/sh\ntrue\n", ["-o", "/dev/null"], conf=settings_conf)
        count[0] += 1
        stop.wait(max(0.0, 1.0 / rate - (time.monotonic() - began)))


def watcher(conf: str, stop: threading.Event, seen: list[int], ready: threading.Barrier) -> None:
    from plurm.wire.client import read_settings
    from plurm.wire.journal_client import Subscription

    with Subscription(settings=read_settings(conf), since=-1) as sub:
        ready.wait()
        while not stop.is_set():
            seen.append(len(sub.poll(time.monotonic() + 0.5)))


def poller(conf: str, stop: threading.Event, asked: list[int], ready: threading.Barrier) -> None:
    from plurm.wire.client import Connection, read_settings

    conn = Connection(read_settings(conf))
    ready.wait()
    try:
        while not stop.is_set():
            conn.request("job_info", {})
            asked.append(1)
            stop.wait(1.0)
    finally:
        conn.close()


def phase(kind: str, conf: str, pid: int, clients: int, seconds: float, rate: float) -> dict[str, float]:
    stop = threading.Event()
    ready = threading.Barrier(clients + 1)
    counter: list[int] = []  # (appended to: list.append is atomic across threads, += is not)
    target = watcher if kind == "watch" else poller
    threads = [threading.Thread(target=target, args=(conf, stop, counter, ready), daemon=True)
               for _ in range(clients)]
    for t in threads:
        t.start()
    ready.wait()  # every client connected (and subscribed) before the clock starts
    submitted = [0]
    sub = threading.Thread(target=submitter, args=(conf, rate, stop, submitted), daemon=True)
    cpu0, wall0 = controller_cpu(pid), time.monotonic()
    sub.start()
    time.sleep(seconds)
    cpu1, wall1 = controller_cpu(pid), time.monotonic()
    stop.set()
    for t in threads + [sub]:
        t.join(timeout=30)
    return {"cpu_s": cpu1 - cpu0, "wall_s": wall1 - wall0, "cpu_pct": 100 * (cpu1 - cpu0) / (wall1 - wall0),
            "jobs": submitted[0], "items": sum(counter)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rate", type=float, default=5.0, help="jobs submitted per second")
    parser.add_argument("--queued", type=int, default=1000, help="held jobs in the queue (what squeue lists)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="streambench") as tmp:
        directory = Path(tmp) / "cluster"
        subprocess.run(command("plurm") + ["cluster", "up", "--dir", str(directory), "--nodes", "4",
                                           "--cpus-per-node", "4"], check=True, capture_output=True)
        try:
            conf = str(directory / "slurm.conf")
            os.environ["SLURM_CONF"] = conf
            pid = int((directory / "run" / "plurmctld.pid").read_text().strip())
            from plurm import api

            with api.Client(conf) as client:  # a queue of the size squeue pollers list each time
                for _ in range(args.queued):
                    client.submit("#!/bin/sh\ntrue\n", ["-H", "-o", "/dev/null"])
            idle0 = controller_cpu(pid)
            time.sleep(2.0)
            idle = (controller_cpu(pid) - idle0) / 2.0 * 100
            watch = phase("watch", conf, pid, args.clients, args.seconds, args.rate)
            poll = phase("poll", conf, pid, args.clients, args.seconds, args.rate)
        finally:
            subprocess.run(command("plurm") + ["cluster", "down", "--dir", str(directory)], capture_output=True)
    print(f"queue: {args.queued} held jobs; {args.rate:g} jobs/s flowing")
    print(f"controller idle                          {idle:8.2f} % CPU")
    for name, fig in (("watch", watch), ("poll", poll)):
        what = "events read" if name == "watch" else "job_info requests"
        print(f"{name}: {args.clients} clients, {fig['jobs']} jobs in {fig['wall_s']:.0f} s   {fig['cpu_pct']:8.2f} % CPU"
              f"  ({fig['cpu_s']:.2f} s CPU; {fig['items']} {what})")
    ratio = poll["cpu_s"] / watch["cpu_s"] if watch["cpu_s"] else float("inf")
    print(f"ratio poll/watch (controller CPU)        {ratio:8.2f} x")
    return 0


def test_stream_bench() -> None:  # (pytest -m bench tests/bench/stream_bench.py)
    assert main(["--seconds", "15"]) == 0


try:
    import pytest

    test_stream_bench = pytest.mark.bench(test_stream_bench)
except ImportError:  # (a script first)
    pass

if __name__ == "__main__":
    sys.exit(main())
