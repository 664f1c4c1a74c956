"""sbatch: submit a batch script (Slurm's command, same options and messages)."""

from __future__ import annotations

import os
import sys
import time


def _print_lines(lines: list[str]) -> None:
    for line in lines:
        print(line, file=sys.stderr)


# States a job does not leave (but a requeue): sbatch --wait stops at them.
_LIVE = ("PENDING", "RUNNING", "SUSPENDED", "CONFIGURING", "COMPLETING", "REQUEUED", "RESIZING")


def wait_exit_code(jobs: list[dict]) -> int:
    """sbatch --wait's exit status for a job's final records (an array: every task's), as the
    real 22.05 sbatch gives it: the job's exit code; 1 when a signal ended it, or when it timed
    out or lost its node; 0 for a cancelled job (its ExitCode is 0:0 in Slurm); an array: the
    highest over its tasks."""
    worst = 0
    for job in jobs:
        state = job.get("state")
        if state == "CANCELLED":
            code = 0
        elif state in ("COMPLETED", "FAILED"):
            code = 1 if job.get("exit_signal") else int(job.get("exit_code") or 0)
        else:  # TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, PREEMPTED, BOOT_FAIL, DEADLINE
            code = 1
        worst = max(worst, code)
    return worst


def wait_for_job(job_id: int) -> int:
    """Poll the one job (and its array tasks) until every record is final.  One job_info for
    one id per poll, and the interval grows to 2 s (Slurm's sbatch polls too, by the second):
    a thousand waiting sbatch cost the controller ~500 small requests a second at most."""
    from plurm.wire.client import ClientError, Connection

    conn = Connection()
    delay = 0.05
    try:
        while True:
            try:
                reply = conn.request("job_info", {"job_ids": [str(job_id)], "all_states": True})
            except ClientError as exc:
                if exc.code not in ("ConnectError", "Timeout"):
                    print(f"sbatch: error: Error waiting for job {job_id}: {exc}", file=sys.stderr)
                    return 1
                reply = None  # the controller restarting: keep waiting, as Slurm's sbatch does
            if reply is not None:
                jobs = [j for j in reply["jobs"] if j.get("job_id") == job_id or j.get("array_job_id") == job_id]
                if not jobs:  # purged already (MinJobAge): nothing left to say
                    return 0
                if all(j.get("state") not in _LIVE for j in jobs):
                    return wait_exit_code(jobs)
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
    finally:
        conn.close()


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
    from plurm.tools.options_rest import RefusedOption, check_clusters

    try:  # -M/--clusters: this cluster only (tools/options_rest.py)
        on_cluster = check_clusters("sbatch", options)
    except RefusedOption as exc:
        _print_lines(exc.lines)
        return exc.exit_code
    from plurm.wire.client import ClientError, request
    from plurm.tools.jobspec import build_spec

    if any(c.get("wrap") is not None for c in req.components):  # (a hetjob's `: --wrap` too)
        default_name = "wrap"
    elif req.script_path:
        default_name = os.path.basename(req.script_path)
    else:
        default_name = "sbatch"
    from plurm.common import exportfile

    try:  # --export-file: the job's environment from the file instead of sbatch's (common/exportfile.py)
        job_environ, file_env = exportfile.job_source(options, environ)
    except exportfile.ExportFileError as exc:
        print(f"sbatch: error: {exc}", file=sys.stderr)
        return 1
    spec = build_spec(options, default_name=default_name, environ=job_environ, batch=True, script=req.script_text,
                      command=os.path.abspath(req.script_path) if req.script_path else None,
                      script_args=req.script_args, raw_options=req.raw_options)
    for name, value in file_env.items():  # (a --export list keeps all the file's entries, as 22.05.8)
        spec["environment"].setdefault(name, value)
    if options.get("get-user-env") not in (None, False):  # the node adds the login environment (common/environment.py)
        spec["environment"]["SLURM_GET_USER_ENV"] = "1"
    from plurm.tools.propagate import PropagateError, submit_variables
    from plurm.wire.client import conf_path

    try:  # --propagate, PropagateResourceLimits: sbatch's soft limits, whatever --export says (tools/propagate.py)
        spec["environment"].update(submit_variables("sbatch", options.get("propagate"), conf_path()))
    except PropagateError as exc:
        print(exc.line, file=sys.stderr)
        return 1
    from plurm.tools.jobspec import not_acted_on

    from plurm.tools.jobspec_topology import spec_resources_notice

    for line in spec_resources_notice("sbatch", options):  # -S, --thread-spec (area: topology)
        print(line, file=sys.stderr)
    # A hetjob (`#SBATCH hetjob` or `:`): its other components, which the script's sruns use.
    # (Slurm shows their Command= as the script's too)
    components = [build_spec(opts, default_name=default_name, environ={}, batch=False, raw_options=raw,
                             command=spec.get("command"))
                  for opts, raw in zip(req.components[1:], req.raw_components[1:])]
    # (--wait: sbatch itself acts on it)
    ignored = sorted({k for one in (spec, *components) for k in not_acted_on(one) if k != "wait"})
    if ignored:
        print(f"sbatch: warning: plurm accepts but does not act on {', '.join('--' + k for k in ignored)} yet "
              "(kept with the job: scontrol show job)", file=sys.stderr)
    test_only = bool(options.get("test-only"))
    try:
        body = {"spec": spec, "test_only": test_only}
        if components:
            body["components"] = components
        from plurm.wire.busy_retry import new_key, submit_retrying

        if not test_only:  # a resend after a lost reply returns the job the first made (wire/busy_retry.py)
            body["key"] = new_key()
        reply = submit_retrying(lambda: request("submit_job", body))
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
        print(f"{reply['job_id']};{on_cluster}" if on_cluster else reply["job_id"], flush=True)
    else:
        print(f"Submitted batch job {reply['job_id']}" + (f" on cluster {on_cluster}" if on_cluster else ""),
              flush=True)
    if options.get("wait"):
        return wait_for_job(int(reply["job_id"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
