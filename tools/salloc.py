"""salloc: obtain an allocation, run a command (default: the user's shell) in it, release it."""

from __future__ import annotations

import os
import subprocess
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
    command = req.command or [environ.get("SHELL", "/bin/sh")]
    try:
        conn = Connection()
        spec = build_spec(options, default_name="interactive",  # 22.05: with a command too
                          environ=environ, batch=False, raw_options=req.raw_options)
        job = allocate(conn, spec, "salloc", quiet=bool(options.get("quiet")))
    except (ClientError, AllocationError) as exc:
        print(exc if isinstance(exc, AllocationError) else f"salloc: error: {exc}", file=sys.stderr)
        return 1
    job_id = job["job_id"]
    print(f"salloc: Granted job allocation {job_id}", file=sys.stderr)
    from plurm.common.environment import salloc_environment

    settings = conn.settings
    env = salloc_environment(environ, job, cluster=settings.cluster_name, conf_path=settings.conf,
                             ctld_host=settings.host_names[0], ctld_port=settings.port)
    try:
        code = subprocess.call(command, env=env)
    except OSError as exc:
        print(f"salloc: error: {command[0]}: {exc.strerror}", file=sys.stderr)
        code = 127
    print(f"salloc: Relinquishing job allocation {job_id}", file=sys.stderr)
    release(conn, job_id, max(code, 0))
    conn.close()
    return code


if __name__ == "__main__":
    sys.exit(main())
