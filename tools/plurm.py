"""`plurm`: the administrator's and developer's entry point.

    plurm cluster up [--nodes N] [--cpus-per-node C] [--memory-per-node MB] [--dir DIR]
                     [--controllers 2 --state postgresql://USER@HOST:PORT/DB] [--slurmctld-timeout S]
                     [--rest]      (plurmrestd too; prints its URL as SLURM_RESTD_URL)
    plurm cluster down [--dir DIR]
    plurm cluster status [--dir DIR]
    plurm demo [--dir DIR] [--down]
    plurm why JOBID
    plurm bench e2e [...]          (tests/bench/e2e.py against the local cluster)
    plurm simulate TRACE.swf | --generate JOBS [--conf F | --compare A B] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import sys


def _cluster(args: argparse.Namespace) -> int:
    from plurm.tools.localcluster import ClusterShape, LocalCluster
    from plurm.wire.client import ClientError

    cluster = LocalCluster(args.dir)
    if args.action == "up":
        shape = ClusterShape(nodes=args.nodes, cpus_per_node=args.cpus_per_node,
                             memory_per_node=args.memory_per_node, gres=args.gres,
                             controllers=args.controllers, state=args.state or "",
                             ctld_timeout=args.slurmctld_timeout)
        if args.controllers > 1 and not (args.state or "").startswith(("postgresql://", "postgres://")):
            print("plurm: error: --controllers 2 needs a shared store: --state postgresql://USER@HOST:PORT/DB",
                  file=sys.stderr)
            return 2
        try:
            given = any(v is not None for v in args.shape_given.values())
            changes = cluster.shape_changes(args.shape_given) if given and os.path.exists(cluster.conf_path) else []
        except (ValueError, OSError) as exc:  # (ConfError, HostlistError: a slurm.conf that does not parse)
            print(f"plurm: error: {exc}", file=sys.stderr)
            return 1
        if changes:
            print(f"plurm: error: {cluster.conf_path} exists and is kept as it is: {'; '.join(changes)}. "
                  f"To change the shape, run `plurm cluster down --dir {cluster.dir}`, then remove "
                  f"{cluster.conf_path} (or edit its NodeName line) and run `plurm cluster up` again",
                  file=sys.stderr)
            return 1
        try:
            if args.rest:  # plurmrestd and its tokens (tools/localrest.py)
                from plurm.tools import localrest

                cluster.write_files(shape)
                if localrest.ensure_jwt(cluster):
                    localrest.restart_controller(cluster)
            started = cluster.up(shape, timeout=args.timeout)
            url = localrest.start(cluster, args.timeout) if args.rest else None
        except (RuntimeError, ClientError) as exc:  # (ClientError: a slurm.conf the commands cannot read)
            print(f"plurm: error: {exc}", file=sys.stderr)
            return 1
        if started:
            print(f"plurm: started {', '.join(started)}", file=sys.stderr)
        else:
            print("plurm: everything was already running", file=sys.stderr)
        print(f"export SLURM_CONF={cluster.conf_path}")
        if url:
            print(f"export SLURM_RESTD_URL={url}")
        return 0
    if args.action == "down":
        stopped = cluster.down()
        print(f"plurm: stopped {', '.join(stopped) if stopped else 'nothing (not running)'}", file=sys.stderr)
        return 0
    # status
    from plurm.tools.localcluster import CTLD_MODULE, NODED_MODULE

    if not os.path.exists(cluster.conf_path):
        print(f"plurm: no cluster in {cluster.dir}", file=sys.stderr)
        return 1
    ctld = cluster._alive("plurmctld", CTLD_MODULE)
    print(f"plurmctld: {'running, pid ' + str(ctld) if ctld else 'stopped'}")
    for name in cluster.node_names():
        pid = cluster._alive(f"plurmd-{name}", NODED_MODULE)
        print(f"plurmd -N {name}: {'running, pid ' + str(pid) if pid else 'stopped'}")
    from plurm.tools.localrest import REST_MODULE, url_file

    rest = cluster._alive("plurmrestd", REST_MODULE)
    if rest and os.path.exists(url_file(cluster)):
        with open(url_file(cluster)) as handle:
            print(f"plurmrestd: running, pid {rest}, {handle.read().strip()}")
    print(f"export SLURM_CONF={cluster.conf_path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="plurm", description="plurm: a workload manager that speaks Slurm")
    sub = parser.add_subparsers(dest="command", required=True)
    cluster = sub.add_parser("cluster", help="a local cluster on this host")
    cluster.add_argument("action", choices=["up", "down", "status"])
    cluster.add_argument("--nodes", type=int, default=None, help="(default 4)")
    cluster.add_argument("--cpus-per-node", type=int, default=None, help="(default 4)")
    cluster.add_argument("--memory-per-node", type=int, default=None, help="MB (default 4000)")
    cluster.add_argument("--gres", default=None, help="GRES per node, as slurm.conf's Gres= (e.g. gpu:4)")
    cluster.add_argument("--dir", default=None, help="cluster directory (default ~/.local/state/plurm/cluster)")
    cluster.add_argument("--timeout", type=float, default=60.0)
    cluster.add_argument("--rest", action="store_true", help="start plurmrestd too (slurmrestd's REST API) and print its URL")
    cluster.add_argument("--controllers", type=int, default=1,
                         help="controllers: 2 = a primary and a standby (127.0.0.1, 127.0.0.2)")
    cluster.add_argument("--state", default=None, help="StateSaveLocation (default DIR/state, SQLite; "
                         "postgresql://USER@HOST:PORT/DB for a shared store)")
    cluster.add_argument("--slurmctld-timeout", type=int, default=None,
                         help="SlurmctldTimeout in seconds (the lease a standby waits out)")
    demo = sub.add_parser("demo", help="start a local cluster, run example jobs, show the results")
    demo.add_argument("--dir", default=None)
    demo.add_argument("--down", action="store_true", help="stop the cluster afterwards")
    why = sub.add_parser("why", help="why a job is in its state: reason, meaning, transition log")
    why.add_argument("job_id")
    from plurm.tools.top import add_arguments as top_arguments  # (argparse only: rich loads on use)

    top_arguments(sub.add_parser("top", help="a live view of the queue, nodes and throughput (the event stream)"))
    bench = sub.add_parser("bench", help="benchmarks (see docs/performance.md)")
    bench.add_argument("what", choices=["e2e", "scheduler"])
    bench.add_argument("rest", nargs=argparse.REMAINDER)
    from plurm.tools.simulate.cli import add_arguments as simulate_arguments

    simulate = sub.add_parser("simulate", help="replay a workload through the scheduler in virtual time")
    simulate_arguments(simulate)
    args = parser.parse_args(argv)
    if args.command == "cluster":
        # The shape options the user gave (None: not given), checked against an existing slurm.conf.
        args.shape_given = {"nodes": args.nodes, "cpus_per_node": args.cpus_per_node,
                            "memory_per_node": args.memory_per_node, "gres": args.gres}
        args.nodes = args.nodes or 4
        args.cpus_per_node = args.cpus_per_node or 4
        args.memory_per_node = args.memory_per_node or 4000
        args.gres = args.gres or ""
        return _cluster(args)
    if args.command == "demo":
        from plurm.tools.demo import run_demo

        return run_demo(args.dir, keep=not args.down)
    if args.command == "why":
        from plurm.tools.why import main as why_main

        return why_main(args.job_id)
    if args.command == "top":
        from plurm.tools.top import run as top_run

        return top_run(args.once, args.interval)
    if args.command == "bench":
        from plurm.tools.bench import run_bench

        return run_bench(args.what, args.rest)
    if args.command == "simulate":
        from plurm.tools.simulate.cli import run as simulate_run

        return simulate_run(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
