"""salloc: obtain an allocation, run a command (default: the user's shell) in it, release it."""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> int:
    from plurm.wire.client import ClientError, Connection
    from plurm.tools.sbatch_cli import parse_salloc
    from plurm.tools.frontend import parse_or_answer
    from plurm.tools.allocation import AllocationError, allocate, release
    from plurm.tools.jobspec import build_spec

    argv = sys.argv[1:] if argv is None else argv
    environ = dict(os.environ)
    # Options (and SALLOC_* inputs), then the command.
    req, done = parse_or_answer("salloc", parse_salloc, argv, environ)
    if req is None:
        return done
    options = req.options
    command = req.command
    from plurm.tools.options_rest import RefusedOption, check_clusters, check_salloc_container, check_x11

    try:  # --x11, -M/--clusters, --container (tools/options_rest.py)
        check_x11("salloc", options, environ)
        check_clusters("salloc", options)
        check_salloc_container(options)
    except RefusedOption as exc:
        print("\n".join(exc.lines), file=sys.stderr)
        return exc.exit_code
    except ClientError as exc:
        print(f"salloc: error: {exc}", file=sys.stderr)
        return 1
    from plurm.tools.salloc_watch import BadSignal, kill_signal

    try:  # -K/--kill-command[=signal]: checked before anything is asked for
        signum = kill_signal(options.get("kill-command"))
    except BadSignal:
        print("salloc: error: Invalid --kill-command specification", file=sys.stderr)
        return 255
    from plurm.tools.jobspec_topology import spec_resources_notice

    for line in spec_resources_notice("salloc", options):  # -S, --thread-spec (area: topology)
        print(line, file=sys.stderr)
    try:
        conn = Connection()
        command = command or _default_command(conn, environ)
        spec = build_spec(options, default_name="interactive",  # 22.05: with a command too
                          environ=environ, batch=False, raw_options=req.raw_options)
        (spec.get("other_options") or {}).pop("kill-command", None)  # (salloc's own: salloc_watch.py)
        # `salloc A : B`: a heterogeneous allocation, one component per part (core_hetjob.py)
        components = [build_spec(opts, default_name="interactive", environ={}, batch=False, raw_options=raw)
                      for opts, raw in zip(req.components[1:], req.raw_components[1:])]
        asked = os.times().elapsed
        job = allocate(conn, spec, "salloc", quiet=bool(options.get("quiet")), components=components)
    except KeyboardInterrupt:  # before the controller gave a job id: nothing to cancel
        return 1
    except AllocationError as exc:
        print(exc, file=sys.stderr)
        return exc.exit_code
    except ClientError as exc:
        print(f"salloc: error: {exc}", file=sys.stderr)
        return 1
    job_id = job["job_id"]
    print(f"salloc: Granted job allocation {job_id}", file=sys.stderr)
    from plurm.tools.options_rest import ring_bell

    ring_bell(options, os.times().elapsed - asked, sys.stdout)  # --bell, --no-bell
    if options.get("no-shell"):  # 22.05 (observed): the allocation stays RUNNING, no command runs
        conn.close()
        return 0
    from plurm.common.environment import salloc_environment

    settings = conn.settings
    env = salloc_environment(environ, job, cluster=settings.cluster_name, conf_path=settings.conf,
                             ctld_host=settings.host_names[0], ctld_port=settings.port)
    from plurm.tools.options_rest import job_variables

    env.update(job_variables("salloc", options))  # SLURM_CPU_FREQ_REQ, SLURM_GPU_FREQ, SLURM_NETWORK
    if any(options.get(k) for k in ("distribution", "mem-bind", "gpu-bind")):  # (area: binding) as sbatch's
        from plurm.common.taskbind import batch_env

        env.update(batch_env(options))  # its steps' srun reads them (reference/binding/salloc.env_options.txt)
    if components:  # a hetjob: salloc's variables per component, instead of component 0's alone
        from plurm.common.environment import MEMORY_VARIABLES, SALLOC_VARIABLES, salloc_het_environment

        records = conn.request("job_info", {"job_ids": [str(job_id)]})["jobs"]
        het_env = salloc_het_environment(environ, sorted(records, key=lambda r: r["job_id"]),
                                         cluster=settings.cluster_name, conf_path=settings.conf,
                                         ctld_host=settings.host_names[0], ctld_port=settings.port)
        for name in (*SALLOC_VARIABLES, *MEMORY_VARIABLES):
            if name not in het_env:
                env.pop(name, None)
        env.update(het_env)
    import shutil
    import signal

    # The command gets the terminal's Ctrl-C; salloc stays to release the allocation (Slurm's
    # salloc ignores SIGINT while its command runs).  A handler, not SIG_IGN: exec resets it.
    previous = signal.signal(signal.SIGINT, lambda *_: None)
    revoked = False
    try:
        if shutil.which(command[0], path=env.get("PATH")) is None:
            print(f'salloc: error: _fork_command: Unable to find command "{command[0]}"', file=sys.stderr)
            code = 1
        else:
            from plurm.tools import salloc_watch

            # The allocation watched meanwhile: revoked, it says so (and -K signals the command).
            code, revoked = salloc_watch.run(conn, job_id, command, env, signum)
    except OSError as exc:
        print(f'salloc: error: _fork_command: Unable to find command "{command[0]}"', file=sys.stderr)
        code = 1
    finally:
        signal.signal(signal.SIGINT, previous)
    if revoked:  # (nothing left to relinquish)
        conn.close()
        return code
    print(f"salloc: Relinquishing job allocation {job_id}", file=sys.stderr)
    release(conn, job_id, code)
    conn.close()
    return code


def _default_command(conn: object, environ: dict[str, str]) -> list[str]:
    """No command: the user's shell (22.05 has no SallocDefaultCommand), or with
    LaunchParameters=use_interactive_step, ``srun`` with InteractiveStepOptions (the shell as a
    step on the allocation's first node).  22.05's hidden ``--interactive`` makes that step share
    the allocation's resources; plurm's srun spells it ``--overlap``."""
    import shlex

    from plurm.wire.client import ClientError

    shell = environ.get("SHELL", "/bin/sh")
    try:
        conf = {str(k).lower(): str(v) for k, v in (conn.request("config", {}).get("options") or {}).items()}
    except ClientError:
        return [shell]
    if "use_interactive_step" not in [p.strip().lower() for p in conf.get("launchparameters", "").split(",")]:
        return [shell]
    step = conf.get("interactivestepoptions", "--interactive --preserve-env --pty $SHELL")
    try:
        words = shlex.split(step.replace("$SHELL", shell))
    except ValueError:  # an unbalanced quote in slurm.conf: as Slurm, the words as they are
        words = step.replace("$SHELL", shell).split()
    return ["srun"] + ["--overlap" if w == "--interactive" else w for w in words]


if __name__ == "__main__":
    sys.exit(main())
