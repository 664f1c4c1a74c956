"""``plurm top``: a live terminal view of the cluster (the queue, the nodes, throughput), read
from the event stream (issue 16 item 4; docs/events.md) with rich.

One listing of the jobs and nodes at start, then only events: a job's state, a node's state
and the count of jobs finished come from ``submit``/``start``/``complete``/... and
``node_state`` events as they happen, so watching costs the controller no polling.  The
journal's backlog gives the throughput of the last minute at once.  ``--once`` prints one
frame and exits (for scripts and tests).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter, deque
from typing import Any

THROUGHPUT_S = 60.0
SHOWN_JOBS = 20
ENDED = {"complete", "cancel"}


class TopState:
    """What the view shows, kept up to date by events (pure: tests feed it events)."""

    def __init__(self) -> None:
        self.jobs: dict[int, dict[str, Any]] = {}
        self.nodes: dict[str, str] = {}
        self.ended: deque[float] = deque()  # when jobs ended (the last THROUGHPUT_S)
        self.seq = 0
        self.events = 0

    def load(self, jobs: list[dict[str, Any]], nodes: list[dict[str, Any]]) -> None:
        for job in jobs:
            spec = job.get("spec") or {}
            self.jobs[job["job_id"]] = {"state": job.get("state", "PENDING"), "user": spec.get("user", ""),
                                        "partition": job.get("partition", ""), "name": spec.get("name", ""),
                                        "nodes": job.get("nodes", [])}
        for node in nodes:
            self.nodes[node["name"]] = node.get("state", "UNKNOWN")

    def apply(self, event: dict[str, Any], now: float, live: bool = True) -> None:
        """One event; ``live`` False: a backlog event (it counts for throughput only)."""
        if event.get("marker"):
            return
        self.seq = max(self.seq, event.get("seq", 0))
        name = event["event"]
        if name in ENDED and event.get("time", 0) >= now - THROUGHPUT_S:
            self.ended.append(event["time"])
        if not live:
            return
        self.events += 1
        if name == "node_state":
            self.nodes[event["node"]] = event["state"]
        elif "job_id" in event and not name.startswith("step_"):
            if name in ENDED:
                self.jobs.pop(event["job_id"], None)  # (squeue's view: active jobs only)
                return
            job = self.jobs.setdefault(event["job_id"], {})
            job.update(state=event["state"], user=event.get("user", ""), partition=event.get("partition", ""),
                       name=event.get("job_name", ""), nodes=event.get("nodes", job.get("nodes", [])))

    def throughput(self, now: float) -> int:
        """Jobs ended in the last THROUGHPUT_S seconds."""
        while self.ended and self.ended[0] < now - THROUGHPUT_S:
            self.ended.popleft()
        return len(self.ended)

    def render(self, now: float, cluster: str = "") -> Any:
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        states = Counter(job["state"] for job in self.jobs.values())
        node_states = Counter(self.nodes.values())
        head = Text.assemble(
            ("plurm top", "bold"), f"  {cluster}  " if cluster else "  ",
            f"jobs: {states.get('RUNNING', 0)} running, {states.get('PENDING', 0)} pending, "
            f"{states.get('SUSPENDED', 0)} suspended   ",
            f"throughput: {self.throughput(now)} jobs/min   events: {self.events} (seq {self.seq})")
        queue = Table(title="queue", expand=True)
        for column in ("JOBID", "PARTITION", "NAME", "USER", "ST", "NODELIST"):
            queue.add_column(column)
        order = {"RUNNING": 0, "SUSPENDED": 1, "PENDING": 2}
        shown = sorted(self.jobs.items(), key=lambda item: (order.get(item[1]["state"], 3), item[0]))
        for job_id, job in shown[:SHOWN_JOBS]:
            queue.add_row(str(job_id), job["partition"], job["name"], job["user"], job["state"],
                          ",".join(job.get("nodes") or []))
        if len(shown) > SHOWN_JOBS:
            queue.caption = f"and {len(shown) - SHOWN_JOBS} more"
        nodes = Table(title="nodes", expand=True)
        nodes.add_column("STATE")
        nodes.add_column("NODES", justify="right")
        nodes.add_column("NAMES")
        for state, count in sorted(node_states.items()):
            names = sorted(n for n, s in self.nodes.items() if s == state)
            nodes.add_row(state, str(count), ",".join(names[:16]) + (" ..." if len(names) > 16 else ""))
        return Group(head, queue, nodes)


def run(once: bool = False, interval: float = 1.0, conf: str | None = None, width: int | None = None) -> int:
    from rich.console import Console

    from plurm.wire.client import ClientError, Connection, read_settings
    from plurm.wire.journal_client import Subscription

    console = Console(width=width)
    try:
        settings = read_settings(conf)
        sub = Subscription(settings=settings)  # first: what changes after the listing is an event
        conn = Connection(settings)
        try:
            jobs = conn.request("job_info", {})
            nodes = conn.request("node_info", {})
        finally:
            conn.close()
    except ClientError as exc:
        print(f"plurm top: error: {exc}", file=sys.stderr)
        return 1
    state = TopState()
    state.load(jobs.get("jobs", []), nodes.get("nodes", []))
    now = time.time()
    for event in sub.backlog:
        state.apply(event, now, live=False)
    state.seq = max(state.seq, sub.seq)
    cluster = jobs.get("cluster", "")
    try:
        if once:
            console.print(state.render(now, cluster))
            return 0
        from rich.live import Live

        with Live(state.render(now, cluster), console=console, refresh_per_second=4, screen=False) as live:
            while True:
                deadline = time.monotonic() + interval
                while time.monotonic() < deadline:
                    for event in sub.poll(deadline):
                        state.apply(event, time.time())
                live.update(state.render(time.time(), cluster))
    except KeyboardInterrupt:
        return 0
    except ClientError as exc:
        print(f"plurm top: the event stream ended: {exc}", file=sys.stderr)
        return 1
    finally:
        sub.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="plurm top", description="a live view of the queue, nodes and throughput")
    add_arguments(parser)
    args = parser.parse_args(argv)
    return run(args.once, args.interval)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--once", action="store_true", help="print one view and exit")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between redraws (default 1)")


if __name__ == "__main__":
    sys.exit(main())
