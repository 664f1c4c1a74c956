"""sbatch: submit a batch script (Slurm's command, same options and messages)."""

from __future__ import annotations

import os
import sys
import time


def _print_lines(lines: list[str]) -> None:
    for line in lines:
        print(line, file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    from plurm.grammar.options import OptionError
    from plurm.tools.sbatch_cli import parse_sbatch
    from plurm.tools.frontend import parse_or_answer

    argv = sys.argv[1:] if argv is None else argv
    environ = dict(os.environ)

    def parse() -> object:
        try:
            return parse_sbatch(argv, environ)
        except OptionError as exc:
            refused = getattr(exc, "request", None)   # what the controller would refuse
            if refused is not None:
                if refused.verbose:
                    from plurm.tools.sbatch_verbose import format_verbose_block

                    sys.stderr.write(format_verbose_block(refused))
                if refused.options.get("test-only"):
                    why = exc.lines[-1].split("submission failed: ", 1)[-1]
                    raise OptionError([f"allocation failure: {why}"], 1) from None
                raise
            # No script file and no --wrap: sbatch reads the script from standard
            # input.  Read it only then, so that a script file never waits on stdin.
            if exc.exit_code == 1 and exc.lines and "Batch script is empty" in exc.lines[0] \
                    and sys.stdin is not None and not sys.stdin.isatty():
                return parse_sbatch(argv, environ, sys.stdin.buffer.read())
            raise

    req, done = parse_or_answer("sbatch", parse)
    if req is None:
        return done
    options = req.options
    _print_lines(req.warnings)
    if req.verbose:
        from plurm.tools.sbatch_verbose import format_verbose_block

        sys.stderr.write(format_verbose_block(req))
    for flag in ("uid", "gid"):  # (and the controller believes only root's and SlurmUser's)
        if options.get(flag) is not None and os.getuid() != 0:
            print(f"sbatch: error: --{flag} only permitted by root user", file=sys.stderr)
            return 255
    from plurm.wire.client import ClientError, request
    from plurm.tools.jobspec import build_spec

    if options.get("wrap") is not None:
        default_name = "wrap"
    elif req.script_path:
        default_name = os.path.basename(req.script_path)
    else:
        default_name = "sbatch"
    spec = build_spec(options, default_name=default_name, environ=environ, batch=True, script=req.script_text,
                      command=os.path.abspath(req.script_path) if req.script_path else None,
                      script_args=req.script_args, raw_options=req.raw_options)
    from plurm.tools.jobspec import not_acted_on

    ignored = not_acted_on(spec)
    if ignored:
        print(f"sbatch: warning: plurm accepts but does not act on {', '.join('--' + k for k in ignored)} yet "
              "(kept with the job: scontrol show job)", file=sys.stderr)
    test_only = bool(options.get("test-only"))
    try:
        reply = request("submit_job", {"spec": spec, "test_only": test_only})
    except ClientError as exc:
        detail = exc.detail
        if exc.code in ("ConnectError", "Timeout", "ConfigError", "AuthenticationError"):
            print(f"sbatch: error: Batch job submission failed: {exc}", file=sys.stderr)
            return 1
        if detail:
            print(f"sbatch: error: {detail}", file=sys.stderr)
        # --test-only's refusal is worded as 22.05.8's slurm_perror("allocation failure")
        print(f"allocation failure: {exc}" if test_only else
              f"sbatch: error: Batch job submission failed: {exc}", file=sys.stderr)
        return 1
    for warning in reply.get("warnings", []):
        print(f"sbatch: warning: {warning}", file=sys.stderr)
    if test_only:
        start = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(reply["start_time"]))
        from plurm.grammar.hostlist import compress

        print(f"sbatch: Job {reply['job_id']} to start at {start} using {reply['cpus']} processors on nodes "
              f"{compress(reply['nodes'])} in partition {reply['partition']}", file=sys.stderr)
        return 0
    if options.get("parsable"):
        print(reply["job_id"])
    else:
        print(f"Submitted batch job {reply['job_id']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
