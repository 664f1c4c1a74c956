"""sdiag: the controller's scheduling and RPC statistics, laid out as Slurm 22.05's sdiag prints
them (tests/tools/test_sdiag.py; the real one's output: ../shared/reference/slurm-22.05/busy_sdiag.txt).

The counters are the controller's (corescheduler/stats.py): RPCs per message type (Slurm's names
where plurm's message has one: wire/rpc_names.py) and per user, the main scheduling pass and the
passes that ran the backfill cycle.  What plurm does not keep prints as 0 (agent queues,
backfilled job counts, backfill table sizes); the job counts are the jobs the controller holds
now (finished ones until MinJobAge purges them), not counts since the last reset.  The
gettimeofday latency is measured here, by the command.  ``-r`` resets the counters (operators,
AdminLevel=Operator and up).  ``format_sdiag`` is pure: the ``stats`` reply in, text out.
"""

from __future__ import annotations

import sys
import time

from plurm.common.cli import Usage, getopt_or_usage

PROG = "sdiag"
STARS = "*" * 55

HELP_TEXT = """\
Usage: sdiag [OPTIONS]
  -a, --all             all statistics
  -i, --sort-by-id      sort RPCs by id
  -M, --cluster=NAME    cluster to issue commands to (only the local one)
  -r, --reset           reset statistics
  -t, --sort-by-time    sort RPCs by total run time
  -T, --sort-by-time2   sort RPCs by average run time
  -V, --version         display current version number

Help options:
  --help                show this help message
  --usage               display brief usage message
"""
USAGE_TEXT = "Usage: sdiag [-M cluster] [-aritT]\n"

_SHORT = "aiM:rtTVh"
_LONG = [("all", "a", 0), ("sort-by-id", "i", 0), ("cluster", "M", 1), ("clusters", "M", 1), ("reset", "r", 0),
         ("sort-by-time", "t", 0), ("sort-by-time2", "T", 0), ("version", "V", 0), ("help", "help", 0),
         ("usage", "usage", 0)]

_FAILED = ("FAILED", "NODE_FAIL", "BOOT_FAIL", "OUT_OF_MEMORY")
_STARTED_NOT = ("PENDING",)


def _when(ts: float) -> str:
    return f"{time.ctime(ts)} ({int(ts)})"


def _sorted(rows: list[tuple[str, int, list[int]]], sort: str) -> list[tuple[str, int, list[int]]]:
    """rows of (name, id, [count, total µs, ...]): by count (default), id, total or mean time."""
    if sort == "i":
        return sorted(rows, key=lambda r: (r[1], r[0]))
    if sort == "t":
        return sorted(rows, key=lambda r: (-r[2][1], r[0]))
    if sort == "T":
        return sorted(rows, key=lambda r: (-(r[2][1] // r[2][0] if r[2][0] else 0), r[0]))
    return sorted(rows, key=lambda r: (-r[2][0], r[0]))


def _mean(row: list[int]) -> int:
    return row[1] // row[0] if row[0] else 0


def format_sdiag(s: dict, sort: str = "", latency_us: int = 0) -> str:
    from plurm.wire.rpc_names import slurm_name

    jobs: dict[str, int] = {}
    for state, _partition, count in s.get("jobs", []):
        jobs[state] = jobs.get(state, 0) + count
    total = sum(jobs.values())
    main, bf = s.get("main", {}), s.get("backfill", {})
    out = [STARS, f"sdiag output at {_when(s.get('now', 0))}", f"Data since      {_when(s.get('reset_time', 0))}",
           STARS,
           "Server thread count:  1", "Agent queue size:     0", "Agent count:          0",
           "Agent thread count:   0", "DBD Agent queue size: 0", "",
           f"Jobs submitted: {total}",
           f"Jobs started:   {total - sum(jobs.get(k, 0) for k in _STARTED_NOT)}",
           f"Jobs completed: {jobs.get('COMPLETED', 0)}",
           f"Jobs canceled:  {jobs.get('CANCELLED', 0)}",
           f"Jobs failed:    {sum(jobs.get(k, 0) for k in _FAILED)}", "",
           f"Job states ts:  {_when(s.get('now', 0))}",
           f"Jobs pending:   {jobs.get('PENDING', 0)}",
           f"Jobs running:   {jobs.get('RUNNING', 0) + jobs.get('SUSPENDED', 0)}", "",
           "Main schedule statistics (microseconds):",
           f"\tLast cycle:   {main.get('last_us', 0)}", f"\tMax cycle:    {main.get('max_us', 0)}",
           f"\tTotal cycles: {main.get('count', 0)}"]
    if main.get("count"):  # (22.05 prints the means only once there was a cycle)
        out += [f"\tMean cycle:   {main.get('mean_us', 0)}", f"\tMean depth cycle:  {main.get('mean_depth', 0)}"]
    out += [f"\tLast queue length: {main.get('last_depth', 0)}", "", "Backfilling stats",
            "\tTotal backfilled jobs (since last slurm start): 0",
            "\tTotal backfilled jobs (since last stats cycle start): 0",
            "\tTotal backfilled heterogeneous job components: 0",
            f"\tTotal cycles: {bf.get('count', 0)}",
            f"\tLast cycle when: {_when(bf.get('last_at') or 0)}" if bf.get("count") else "\tLast cycle when: N/A",
            f"\tLast cycle: {bf.get('last_us', 0)}", f"\tMax cycle:  {bf.get('max_us', 0)}"]
    if bf.get("count"):
        out += [f"\tMean cycle: {bf.get('mean_us', 0)}"]
    out += [f"\tLast depth cycle: {bf.get('last_depth', 0)}",
            f"\tLast depth cycle (try sched): {bf.get('last_depth', 0)}"]
    if bf.get("count"):
        out += [f"\tDepth Mean: {bf.get('mean_depth', 0)}", f"\tDepth Mean (try depth): {bf.get('mean_depth', 0)}"]
    out += [f"\tLast queue length: {bf.get('last_depth', 0)}"]
    if bf.get("count"):
        out += [f"\tQueue length mean: {bf.get('mean_depth', 0)}"]
    out += ["\tLast table size: 0"]
    if bf.get("count"):
        out += ["\tMean table size: 0"]
    out += ["", f"Latency for 1000 calls to gettimeofday(): {latency_us} microseconds", "",
            "Remote Procedure Call statistics by message type"]
    rows = [(slurm_name(k)[0], slurm_name(k)[1], r) for k, r in s.get("rpc", {}).items()]
    for name, number, r in _sorted(rows, sort):
        out.append(f"\t{name:<40}({number:5d}) count:{r[0]:<6d} ave_time:{_mean(r):<6d} total_time:{r[1]}")
    out += ["", "Remote Procedure Call statistics by user"]
    users = [(name, r[3] if len(r) > 3 else 0, r) for name, r in s.get("rpc_user", {}).items()]
    for name, uid, r in _sorted(users, sort):
        out.append(f"\t{name:<16}({uid:8d}) count:{r[0]:<6d} ave_time:{_mean(r):<6d} total_time:{r[1]}")
    out += ["", "Pending RPC statistics", "\tNo pending RPCs"]
    return "\n".join(out) + "\n"


def _gettimeofday_latency() -> int:
    began = time.perf_counter()
    for _ in range(1000):
        time.time()
    return int((time.perf_counter() - began) * 1e6)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        pairs, operands = getopt_or_usage(PROG, list(argv), _SHORT, _LONG)
    except Usage as exc:
        return exc.write()
    reset = False
    sort = ""
    for key, _value in pairs:
        if key in ("h", "help"):
            sys.stdout.write(HELP_TEXT)
            return 0
        if key == "usage":
            sys.stdout.write(USAGE_TEXT)
            return 0
        if key == "V":
            from plurm import write_version

            write_version()
            return 0
        if key == "r":
            reset = True
        elif key in ("i", "t", "T"):
            sort = str(key)
    if operands:
        sys.stderr.write(f"{PROG}: unrecognized argument {operands[0]!r}\n{USAGE_TEXT}")
        return 1
    from plurm.wire.client import ClientError, request

    try:
        reply = request("stats", {"reset": reset})
    except ClientError as exc:
        code = getattr(exc, "code", "")
        why = "Unable to contact slurm controller (connect failure)" \
            if code in ("ConnectError", "Timeout", "ConfigError") else str(exc)
        sys.stderr.write(f"{'slurm_reset_statistics' if reset else 'slurm_get_statistics'}: {why}\n")
        return 1
    if reset:
        sys.stdout.write("Reset scheduling statistics\n")
        return 0
    sys.stdout.write(format_sdiag(reply, sort, _gettimeofday_latency()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
