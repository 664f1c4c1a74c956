"""`plurm simulate`: replay a workload through the real scheduling core in virtual time.

    plurm simulate TRACE.swf [--conf slurm.conf] [--out DIR]
    plurm simulate --generate 5000 [--nodes 128 --cpus-per-node 8 --seed 1 --load 0.85] [--save-trace F]
    plurm simulate TRACE.swf --compare A.conf B.conf [--out DIR]

See docs/simulator.md.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from typing import Any, TextIO

from plurm.tools.simulate.swf import SwfError, Trace, read_swf, write_swf

DEFAULT_NODES, DEFAULT_CPUS = 128, 8


def build_parser(prog: str = "plurm simulate") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description="Replay an SWF trace or a generated workload "
                                     "through plurm's scheduling core in virtual time (docs/simulator.md).")
    add_arguments(parser)
    return parser


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", nargs="?", help="a Standard Workload Format trace (.swf or .swf.gz)")
    parser.add_argument("--generate", type=int, metavar="JOBS",
                        help="generate JOBS jobs (Lublin-Feitelson model) instead of reading a trace")
    parser.add_argument("--seed", type=int, default=1, help="generator seed (default 1)")
    parser.add_argument("--load", type=float, default=0.85, help="generator's offered load (default 0.85)")
    parser.add_argument("--save-trace", metavar="FILE", help="write the generated workload as SWF")
    parser.add_argument("--nodes", type=int, help="nodes of the default cluster (default: the trace's MaxNodes)")
    parser.add_argument("--cpus-per-node", type=int,
                        help="CPUs per node of the default cluster (default: MaxProcs / MaxNodes)")
    policy = parser.add_mutually_exclusive_group()
    policy.add_argument("--conf", metavar="SLURM_CONF", help="the cluster and its policies (a slurm.conf)")
    policy.add_argument("--compare", nargs=2, metavar=("A_CONF", "B_CONF"),
                        help="run two slurm.conf files on the same workload and compare them")
    parser.add_argument("--out", default="simulate-out", metavar="DIR", help="output folder (default simulate-out)")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots (no matplotlib needed)")
    progress = parser.add_mutually_exclusive_group()
    progress.add_argument("--progress", action="store_true", default=None, help="show progress on stderr")
    progress.add_argument("--no-progress", dest="progress", action="store_false")


class Progress:
    """A one-line progress bar on stderr, redrawn in place with \\r."""

    def __init__(self, label: str, stream: TextIO = sys.stderr, width: int = 30) -> None:
        self.label, self.stream, self.width = label, stream, width
        self.drawn = False

    def __call__(self, done: int, total: int) -> None:
        frac = done / total if total else 1.0
        filled = int(frac * self.width)
        self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (self.width - filled)}] "
                          f"{frac:4.0%} {done}/{total} jobs")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()


def _workload(args: argparse.Namespace) -> tuple[Trace, int, int]:
    """The trace to run and the default cluster's shape (nodes, CPUs per node)."""
    if args.generate is not None:
        from plurm.tools.simulate.workload import generate

        nodes = args.nodes or DEFAULT_NODES
        cpus = args.cpus_per_node or DEFAULT_CPUS
        header, jobs = generate(args.generate, nodes * cpus, seed=args.seed, load=args.load, max_nodes=nodes)
        if args.save_trace:
            write_swf(args.save_trace, header, jobs)
        return Trace(header, jobs, {}, "<generated>"), nodes, cpus
    trace = read_swf(args.trace)
    max_procs = trace.header.max_procs or max((j.procs for j in trace.jobs), default=1)
    nodes = args.nodes or trace.header.max_nodes or max_procs
    cpus = args.cpus_per_node or max(1, max_procs // nodes)
    return trace, nodes, cpus


def _label(path: str, taken: set[str]) -> str:
    base = os.path.splitext(os.path.basename(path))[0] or "conf"
    name, k = base, 2
    while name in taken:
        name, k = f"{base}-{k}", k + 1
    taken.add(name)
    return name


def _run_one(conf: Any, trace: Trace, label: str, show_progress: bool) -> Any:
    from plurm.tools.simulate.engine import simulate

    bar = Progress(label) if show_progress else None
    started = time.perf_counter()  # the report's jobs/s: wall time of the run, not the simulation's clock
    try:
        result = simulate(conf, trace.jobs, label=label, skipped=trace.skipped, progress=bar)
    finally:
        if bar is not None:
            bar.close()
    result.wall_s = time.perf_counter() - started
    result.peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB
    return result


def run(args: argparse.Namespace) -> int:
    from plurm.tools.simulate.engine import default_conf_text, load_conf, policy_name
    from plurm.tools.simulate.report import (PlotsUnavailable, compare_table, plot_compare, write_outputs,
                                             write_summary)

    if (args.trace is None) == (args.generate is None):
        print("plurm simulate: error: give a trace or --generate JOBS (one of them)", file=sys.stderr)
        return 2
    if args.generate is not None and args.generate < 1:
        print("plurm simulate: error: --generate needs at least one job", file=sys.stderr)
        return 2
    for name in ("nodes", "cpus_per_node"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            print(f"plurm simulate: error: --{name.replace('_', '-')} must be at least 1", file=sys.stderr)
            return 2
    try:
        trace, nodes, cpus = _workload(args)
    except (OSError, SwfError, ValueError) as exc:
        print(f"plurm simulate: error: {exc}", file=sys.stderr)
        return 1
    paths = args.compare or ([args.conf] if args.conf else [None])
    runs: list[tuple[str, Any]] = []
    taken: set[str] = set()
    try:
        for path in paths:
            conf = load_conf(path) if path else load_conf(text=default_conf_text(nodes, cpus))
            runs.append((_label(path, taken) if path else "default", conf))
    except (OSError, ValueError) as exc:  # ConfError is a ValueError: it names the file and line
        print(f"plurm simulate: error: {exc}", file=sys.stderr)
        return 1
    show = args.progress if args.progress is not None else sys.stderr.isatty()
    os.makedirs(args.out, exist_ok=True)
    summaries, results = [], []
    plots = not args.no_plots
    for label, conf in runs:
        result = _run_one(conf, trace, label, show)
        out_dir = os.path.join(args.out, label) if args.compare else args.out
        extra = {"policy_settings": policy_name(conf), "trace": trace.path}
        try:
            summaries.append(write_outputs(out_dir, result, plots=plots, extra=extra))
        except PlotsUnavailable as exc:
            print(f"plurm simulate: warning: {exc}", file=sys.stderr)
            plots = False
            summaries.append(write_outputs(out_dir, result, plots=False, extra=extra))
        results.append(result)
    names = [label for label, _ in runs]
    print(compare_table(summaries, names))
    if args.compare:
        write_summary(os.path.join(args.out, "compare.json"), {"runs": dict(zip(names, summaries))})
        if plots:
            plot_compare(os.path.join(args.out, "compare.png"), results)
    print(f"outputs in {args.out}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
