"""Interactive and waiting forms (issue 13, points 8 and 10): sbatch --wait, srun's I/O options,
--pty, Ctrl-C on srun and salloc.  The expected words and exit codes are the real Slurm 22.05's,
captured on the anchor cluster (tests/integration/reference/interactive/INDEX.md)."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
from pathlib import Path

import pytest

from plurmtest import Cluster, command, wait_for


class Terminal:
    """A command on a pseudo-terminal of the test's own (what a user's terminal is)."""

    def __init__(self, cluster: Cluster, name: str, *args: str, cwd: Path) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: exec at once
            os.chdir(cwd)
            argv = command(name) + list(args)
            os.execvpe(argv[0], argv, cluster.env)
        self.output = b""

    def read_until(self, text: str, limit_s: float = 30.0) -> str:
        """Output until ``text`` appears (or the command ends / the limit passes: then the
        assertion that follows fails with what was read)."""
        import time

        deadline = time.monotonic() + limit_s
        while text.encode() not in self.output and time.monotonic() < deadline:
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if ready:
                try:
                    data = os.read(self.fd, 4096)
                except OSError:
                    break
                if not data:
                    break
                self.output += data
        return self.output.decode(errors="replace")

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)

    def wait(self) -> int:
        self.read_until("\0never\0", limit_s=60.0)  # to the end of its output
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        return os.waitstatus_to_exitcode(status)


# ------------------------------------------------------------------ sbatch --wait
@pytest.mark.parametrize("body,expected", [("exit 3", 3), ("kill -9 $$", 1), ("true", 0)])
def test_sbatch_wait_exits_with_the_jobs_code(cluster: Cluster, workdir: Path, body: str, expected: int) -> None:
    proc = cluster.run("sbatch", "--wait", "-o", "/dev/null", "--wrap", body, cwd=workdir)
    assert proc.returncode == expected, proc.stderr
    assert proc.stdout.startswith("Submitted batch job ")
    assert "does not act on" not in proc.stderr


def test_sbatch_wait_on_a_cancelled_job_exits_0(cluster: Cluster, workdir: Path) -> None:
    import subprocess

    waiting = subprocess.Popen(command("sbatch") + ["--wait", "--parsable", "-o", "/dev/null", "--wrap", "sleep 300"],
                               cwd=workdir, env=cluster.env, stdout=subprocess.PIPE, text=True)
    assert waiting.stdout is not None
    job_id = int(waiting.stdout.readline())
    cluster.wait_state(job_id, "RUNNING")
    cluster.run("scancel", str(job_id), check=True)
    assert waiting.wait(timeout=60) == 0  # Slurm: a cancelled job's ExitCode is 0:0


def test_sbatch_wait_array_is_the_highest_task_code(cluster: Cluster, workdir: Path) -> None:
    proc = cluster.run("sbatch", "--wait", "--array=0-2", "-o", "/dev/null", "--wrap", "exit $SLURM_ARRAY_TASK_ID",
                       cwd=workdir)
    assert proc.returncode == 2


# ------------------------------------------------------------------ srun I/O
def test_srun_forwards_stdin(cluster: Cluster, workdir: Path) -> None:
    assert cluster.run("srun", "-n1", "cat", input="hello\n", cwd=workdir, check=True).stdout == "hello\n"
    both = cluster.run("srun", "-n2", "-l", "cat", input="a\nb\n", cwd=workdir, check=True).stdout
    assert sorted(both.splitlines()) == ["0: a", "0: b", "1: a", "1: b"]
    one = cluster.run("srun", "-n2", "-l", "--input=1", "cat", input="a\nb\n", cwd=workdir, check=True).stdout
    assert one.splitlines() == ["1: a", "1: b"]
    assert cluster.run("srun", "-n2", "--input=none", "cat", input="a\n", cwd=workdir, check=True).stdout == ""


def test_srun_input_files(cluster: Cluster, workdir: Path) -> None:
    (workdir / "in.txt").write_text("from file\n")
    (workdir / "in-0.txt").write_text("zero\n")
    (workdir / "in-1.txt").write_text("one\n")
    shared = cluster.run("srun", "-n2", "-l", "-i", "in.txt", "cat", cwd=workdir, check=True).stdout
    assert sorted(shared.splitlines()) == ["0: from file", "1: from file"]
    per_task = cluster.run("srun", "-n2", "-l", "-i", "in-%t.txt", "cat", cwd=workdir, check=True).stdout
    assert sorted(per_task.splitlines()) == ["0: zero", "1: one"]
    missing = cluster.run("srun", "-n1", "-i", "nonexist.txt", "cat", cwd=workdir)
    assert missing.returncode == 1
    assert missing.stderr.strip().endswith("srun: error: Could not open stdin file: No such file or directory")


def test_srun_output_patterns(cluster: Cluster, workdir: Path) -> None:
    script = "echo out $SLURM_PROCID; echo err $SLURM_PROCID >&2"
    cluster.run("srun", "-n2", "-o", "out-%t.txt", "sh", "-c", script, cwd=workdir, check=True)
    assert (workdir / "out-0.txt").read_text() == "out 0\nerr 0\n"
    assert (workdir / "out-1.txt").read_text() == "out 1\nerr 1\n"
    job = cluster.run("srun", "-N2", "-n3", "-o", "o-%j-%s-%n-%t.txt", "true", cwd=workdir, check=True)
    assert job.stdout == ""
    names = sorted(p.name.split("-", 2)[2] for p in workdir.glob("o-*.txt"))
    assert names == ["0-0-0.txt", "0-0-1.txt", "0-1-2.txt"]  # step 0; node 0 has tasks 0 and 1 (3+... layout)
    cluster.run("srun", "-n2", "-o", "oo.txt", "-e", "ee.txt", "sh", "-c", script, cwd=workdir, check=True)
    assert sorted((workdir / "oo.txt").read_text().splitlines()) == ["out 0", "out 1"]
    assert sorted((workdir / "ee.txt").read_text().splitlines()) == ["err 0", "err 1"]
    cluster.run("srun", "-n2", "-l", "-o", "ol.txt", "sh", "-c", "echo out $SLURM_PROCID", cwd=workdir, check=True)
    assert sorted((workdir / "ol.txt").read_text().splitlines()) == ["0: out 0", "1: out 1"]
    none = cluster.run("srun", "-n2", "-o", "none", "sh", "-c", "echo out; echo err >&2", cwd=workdir, check=True)
    assert (none.stdout, none.stderr) == ("", "")
    no_err = cluster.run("srun", "-n2", "-e", "none", "sh", "-c", "echo out; echo err >&2", cwd=workdir, check=True)
    assert (no_err.stdout, no_err.stderr) == ("out\nout\n", "")
    task0 = cluster.run("srun", "-n2", "-o", "0", "sh", "-c", "echo out $SLURM_PROCID; echo err >&2", cwd=workdir,
                        check=True)
    assert (task0.stdout, task0.stderr) == ("out 0\n", "err\n")
    bad = cluster.run("srun", "-n1", "-o", "/nonexist/x.txt", "echo", "hi", cwd=workdir)
    assert bad.returncode == 1
    assert "srun: error: Could not open stdout file: No such file or directory" in bad.stderr


# ------------------------------------------------------------------ --pty, Ctrl-C
def test_srun_pty_gives_task_zero_a_terminal(cluster: Cluster, workdir: Path) -> None:
    term = Terminal(cluster, "srun", "--pty", "bash", "-c", "tty; stty size", cwd=workdir)
    assert term.wait() == 0
    lines = term.output.decode().splitlines()
    assert lines[0].startswith("/dev/pts/"), lines
    assert lines[1] == "0 0"  # the test's terminal has no size: Slurm's srun shows the same


def test_srun_pty_ctrl_c_goes_to_the_task(cluster: Cluster, workdir: Path) -> None:
    term = Terminal(cluster, "srun", "--pty", "bash", "-c",
                    'trap "echo got INT; exit 5" INT; echo ready; sleep 300 & wait', cwd=workdir)
    term.read_until("ready")
    term.send(b"\x03")
    assert term.wait() == 5
    assert "got INT" in term.output.decode()
    assert "srun: error: n1: task 0: Exited with exit code 5" in term.output.decode() or \
        "task 0: Exited with exit code 5" in term.output.decode()


def test_ctrl_c_on_a_pending_srun_revokes_it(cluster: Cluster, workdir: Path) -> None:
    term = Terminal(cluster, "srun", "--begin=now+1hour", "-n1", "hostname", cwd=workdir)
    text = term.read_until("queued and waiting for resources")
    job_id = int(text.split("srun: job ", 1)[1].split()[0])
    term.send(b"\x03")
    assert term.wait() == 1
    assert f"srun: Job allocation {job_id} has been revoked\r\nsrun: Force Terminated JobId={job_id}\r\n" \
        in term.output.decode()
    assert "Traceback" not in term.output.decode()
    assert cluster.wait_state(job_id, "CANCELLED")["state"] == "CANCELLED"


def test_ctrl_c_on_a_pending_salloc_revokes_it(cluster: Cluster, workdir: Path) -> None:
    term = Terminal(cluster, "salloc", "--begin=now+1hour", "-n1", "hostname", cwd=workdir)
    text = term.read_until("queued and waiting for resources")
    job_id = int(text.split("salloc: Pending job allocation ", 1)[1].split()[0])
    term.send(b"\x03")
    assert term.wait() == 1
    assert f"salloc: Job allocation {job_id} has been revoked.\r\nsalloc: Job aborted due to signal" \
        in term.output.decode()
    assert cluster.wait_state(job_id, "CANCELLED")["state"] == "CANCELLED"


def test_ctrl_c_twice_on_a_running_srun_aborts_the_step(cluster: Cluster, workdir: Path) -> None:
    term = Terminal(cluster, "srun", "-n2", "bash", "-c", "echo ready; exec sleep 300", cwd=workdir)
    term.read_until("ready\r\nready")
    term.send(b"\x03")
    text = term.read_until("running")
    assert "srun: interrupt (one more within 1 sec to abort)\r\n" in text
    assert "srun: StepId=" in text and ".0 tasks 0-1: running" in text
    term.send(b"\x03")  # at once: well within the second
    assert term.wait() == 128 + signal.SIGINT
    text = term.output.decode()
    assert "task 0" not in text and "task 1" not in text, text  # 22.05: no per-task lines after the abort
    assert "srun: sending Ctrl-C to StepId=" in text
    assert "srun: forcing job termination\r\nsrun: Job step aborted: Waiting up to 32 seconds for job step to " \
           "finish." in text
    assert re.search(r"slurmstepd-n\d: error: \*\*\* STEP \d+\.0 ON n\d CANCELLED AT \d{4}-\d\d-\d\dT[\d:]{8} \*\*\*",
                     text), text


# ------------------------------------------------------------------ salloc
def test_salloc_command_exit_codes(cluster: Cluster, workdir: Path) -> None:
    assert cluster.run("salloc", "-N1", "sh", "-c", "exit 3", cwd=workdir).returncode == 3
    missing = cluster.run("salloc", "-N1", "nonexistentcmd", cwd=workdir)
    assert missing.returncode == 1
    assert 'salloc: error: _fork_command: Unable to find command "nonexistentcmd"' in missing.stderr
    (workdir / "k9.sh").write_text("#!/bin/sh\nkill -9 $$\n")
    (workdir / "k9.sh").chmod(0o755)
    assert cluster.run("salloc", "-N1", "./k9.sh", cwd=workdir).returncode == 0  # as 22.05's salloc


def test_srun_jobid_of_a_job_that_does_not_run(cluster: Cluster, workdir: Path) -> None:
    proc = cluster.run("srun", "--jobid=99999", "hostname", cwd=workdir)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        "srun: error: Unable to confirm allocation for job 99999: Invalid job id specified",
        "srun: Check SLURM_JOB_ID environment variable. Expired or invalid job 99999"]


def test_salloc_without_a_command_runs_the_users_shell(cluster: Cluster, workdir: Path) -> None:
    # 22.05 has no SallocDefaultCommand: $SHELL runs in the allocation, and salloc exits with its code.
    proc = cluster.run("salloc", "-N1", input="echo in-shell $SLURM_JOB_ID; exit 4\n", cwd=workdir,
                       env={"SHELL": "/bin/sh"})
    assert proc.returncode == 4, proc.stderr
    job_id = int(proc.stderr.split("salloc: Granted job allocation ", 1)[1].split()[0])
    assert proc.stdout == f"in-shell {job_id}\n"
    assert proc.stderr.splitlines()[-1] == f"salloc: Relinquishing job allocation {job_id}"


def test_salloc_command_and_srun_inside_exit_codes(cluster: Cluster, workdir: Path) -> None:
    plain = cluster.run("salloc", "-N1", "hostname", cwd=workdir)
    assert (plain.returncode, plain.stdout.strip() != "") == (0, True), plain.stderr
    step = cluster.run("salloc", "-N1", "srun", "sh", "-c", "exit 7", cwd=workdir)
    assert step.returncode == 7, step.stderr
    assert "srun: error: " in step.stderr and ": task 0: Exited with exit code 7" in step.stderr


def test_srun_jobid_runs_a_step_of_a_running_batch_job(cluster: Cluster, workdir: Path) -> None:
    # As on the real 22.05 (reference/interactive/INDEX.md): the batch step does not hold the job's
    # CPUs against a step, so srun --jobid into a job that uses them all runs at once, with or
    # without --overlap, and its steps are numbered 0, 1, ... as steps of that job.
    job_id = cluster.sbatch("-N1", "--exclusive", "-o", "/dev/null", "--wrap", "sleep 300", cwd=workdir)
    try:
        cluster.wait_state(job_id, "RUNNING")
        first = cluster.run("srun", f"--jobid={job_id}", "sh", "-c", "echo $SLURM_JOB_ID.$SLURM_STEP_ID",
                            cwd=workdir, timeout=60)
        assert (first.returncode, first.stdout) == (0, f"{job_id}.0\n"), first.stderr
        second = cluster.run("srun", f"--jobid={job_id}", "--overlap", "sh", "-c", "echo $SLURM_JOB_ID.$SLURM_STEP_ID",
                             cwd=workdir, timeout=60)
        assert (second.returncode, second.stdout) == (0, f"{job_id}.1\n"), second.stderr
        assert cluster.job(job_id)["state"] == "RUNNING"  # the steps leave the job running
    finally:
        cluster.run("scancel", str(job_id))


# ------------------------------------------------------------------ sattach
def test_sattach_follows_a_running_steps_output_and_ends_with_it(cluster: Cluster, workdir: Path) -> None:
    import subprocess

    # The tasks tick until the test says go: sattach sees ticks (it is attached), then each task's
    # last line, and exits 0 when the step ends.  Nothing is timed.
    script = ('[ "$SLURM_PROCID" = 0 ] && echo $SLURM_JOB_ID > id.txt; '
              'while [ ! -e go ]; do echo tick; sleep 0.2; done; echo after $SLURM_PROCID; echo err $SLURM_PROCID >&2')
    srun = subprocess.Popen(command("srun") + ["-N2", "-n2", "sh", "-c", script], cwd=workdir, env=cluster.env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: (workdir / "id.txt").exists() and (workdir / "id.txt").read_text().strip() != "",
                 what="the step's job id")
        job_id = int((workdir / "id.txt").read_text())
        sattach = subprocess.Popen(command("sattach") + ["-l", f"{job_id}.0"], cwd=workdir, env=cluster.env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert sattach.stdout is not None
        seen = set()
        while len(seen) < 2:  # both nodes' tasks are sending here
            line = sattach.stdout.readline()
            assert line, sattach.stderr.read() if sattach.stderr else ""
            if line.endswith(": tick\n"):
                seen.add(line.split(":")[0])
        (workdir / "go").touch()
        out, err = sattach.communicate(timeout=60)
        assert sattach.returncode == 0, err
        assert {"0: after 0", "1: after 1"} <= set(out.splitlines())
        assert sorted(err.splitlines()) == ["0: err 0", "1: err 1"]
        assert srun.wait(timeout=60) == 0
    finally:
        (workdir / "go").touch()
        srun.wait(timeout=60)


def test_sattach_errors_as_slurm(cluster: Cluster, workdir: Path) -> None:
    usage = "Usage: sattach [options] <jobid.stepid>\n"
    job_id = cluster.sbatch("-o", "/dev/null", "--wrap", "sleep 300", cwd=workdir)
    try:
        cluster.wait_state(job_id, "RUNNING")
        for args, err, out in (
                ([f"{job_id}.77"], "sattach: error: Could not get job step info: Invalid job id specified\n", ""),
                (["99999.0"], "sattach: error: Could not get job step info: Invalid job id specified\n", ""),
                ([str(job_id)], "sattach: error: Failed to parse stepid from command line options\n", usage),
                (["abc"], "sattach: error: Failed to parse stepid from command line options\n", usage),
                ([], "sattach: error: too many parameters\n", usage),
                ([f"{job_id}.0", "x"], "sattach: error: too many parameters\n", usage)):
            proc = cluster.run("sattach", *args, cwd=workdir)
            assert (proc.returncode, proc.stdout, proc.stderr) == (1, out, err), args
        assert cluster.run("sattach", "--usage").stdout == usage
        bogus = cluster.run("sattach", "--bogus", "1.0")
        assert (bogus.returncode, bogus.stderr) == (1, "sattach: unrecognized option '--bogus'\n"
                                                       'Try "sattach --help" for more information\n')
    finally:
        cluster.run("scancel", str(job_id))


def test_sattach_sends_its_stdin_and_its_end_to_the_tasks_it_filters(cluster: Cluster, workdir: Path) -> None:
    import subprocess

    script = '[ "$SLURM_PROCID" = 0 ] && echo $SLURM_JOB_ID > id.txt; exec cat'
    srun = subprocess.Popen(command("srun") + ["-N2", "-n2", "-l", "sh", "-c", script], cwd=workdir, env=cluster.env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert srun.stdin is not None and srun.stdout is not None
    try:
        wait_for(lambda: (workdir / "id.txt").exists() and (workdir / "id.txt").read_text().strip() != "",
                 what="the step's job id")
        job_id = int((workdir / "id.txt").read_text())
        sattach = subprocess.Popen(command("sattach") + ["-l", "--input-filter=1", f"{job_id}.0"], cwd=workdir,
                                   env=cluster.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        assert sattach.stdin is not None
        sattach.stdin.write("hello from sattach\n")
        sattach.stdin.close()  # its end is task 1's too (22.05: reference/interactive/INDEX.md)
        assert srun.stdout.readline() == "1: hello from sattach\n"
        srun.stdin.write("from srun\n")
        srun.stdin.flush()
        assert srun.stdout.readline() == "0: from srun\n"  # task 1 reads no more
        srun.stdin.close()  # now the tasks' input ends and so does the step
        assert sattach.stdout is not None and sattach.stderr is not None
        out, err = sattach.stdout.read(), sattach.stderr.read()  # to their ends: sattach has exited
        assert sattach.wait(timeout=60) == 0, err
        assert out.splitlines() == ["1: hello from sattach", "0: from srun"]
        assert srun.wait(timeout=60) == 0
    finally:
        if srun.poll() is None:
            srun.kill()
            srun.wait()


def test_salloc_use_interactive_step_runs_the_shell_as_a_step(fresh_cluster: Cluster, workdir: Path) -> None:
    c = fresh_cluster
    c.conf.write_text(c.conf.read_text() + "LaunchParameters=use_interactive_step\n")
    c.run("scontrol", "reconfigure", check=True)
    env = dict(c.env, SHELL="/bin/sh")
    term = Terminal(Cluster(c.dir, c.conf, env), "salloc", "-N1", cwd=workdir)
    term.read_until("Granted job allocation")
    # Typed ahead, before srun has its terminal: kept for the shell (not flushed by raw mode).
    term.send(b"echo step=$SLURM_STEP_ID tty=$(tty); exit 3\n")
    assert term.wait() == 3
    text = term.output.decode()
    assert "step=0 tty=/dev/pts/" in text, text  # the shell is step 0 of the allocation, on a terminal
