"""salloc/srun ``-I``/``--immediate[=secs]`` and salloc ``-K``/``--kill-command[=signal]`` against
real daemons (issue 14): the words and exit codes are the real Slurm 22.05's, captured on the
anchor cluster (tests/integration/reference/immediate/INDEX.md) and compared case by case.

-I and -I1 are the controller's (corescheduler/core_immediate.py): the job is failed in the pass
after its submission; -I<secs> is the client's (tools/allocation.py).  -K: tools/salloc_watch.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from plurmtest import Cluster, command, wait_for

REFERENCE = Path(__file__).parent / "reference" / "immediate"
TRAPPER = """#!/bin/sh
trap 'echo got TERM; exit 3' TERM
trap 'echo got HUP; exit 4' HUP
trap 'echo got USR1; exit 6' USR1
sleep {sleep} & wait
echo command ended by itself
"""


def reference(group: str, title: str) -> tuple[list[str], int]:
    """A case of captures_<group>.txt: its lines (ids as J) and its exit status."""
    text = (REFERENCE / f"captures_{group}.txt").read_text()
    for block in text.split("=== ")[1:]:
        head, _, body = block.partition("\n")
        if head == title:
            lines = body.rstrip("\n").split("\n")
            assert lines[-1].startswith("rc="), block
            return lines[:-1], int(lines[-1][3:])
    raise KeyError(f"{title!r} not captured in captures_{group}.txt")


def norm(text: str) -> list[str]:
    """Output lines with job ids as J (as capture.sh writes them)."""
    return re.sub(r"\b(job |allocation |Job |JobId=)\d+", r"\1J", text).splitlines()


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """2 nodes of 2 CPUs: two --exclusive jobs fill it."""
    from plurmtest import start_cluster

    c = start_cluster(tmp_path_factory.mktemp("immediate"), nodes=2, cpus=2, memory=2000)
    try:
        yield c
    finally:
        c.down()


@pytest.fixture
def busy(small: Cluster, tmp_path: Path) -> Iterator[int]:
    """Every node taken by one job (its id) for the test's length."""
    blocker = small.sbatch("--exclusive", "-N2", "-o", "/dev/null", "--wrap", "sleep 300", cwd=tmp_path)
    small.wait_state(blocker, "RUNNING")
    try:
        yield blocker
    finally:
        small.run("scancel", str(blocker))
        small.wait_idle()


def last_job(c: Cluster) -> dict:
    jobs = c.request("job_info", {"all_states": True})["jobs"]
    return max(jobs, key=lambda j: j["job_id"])


def check_case(c: Cluster, group: str, title: str, argv: list[str], cwd: Path,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    lines, rc = reference(group, title)
    proc = c.run(*argv, cwd=cwd, env=env)
    assert (proc.returncode, norm(proc.stdout + proc.stderr)) == (rc, lines), (title, proc)
    return proc


def test_immediate_is_refused_by_the_controller_when_the_nodes_are_busy(
        small: Cluster, busy: int, tmp_path: Path) -> None:
    c = small
    check_case(c, "immediate", "salloc -I true (all nodes busy)", ["salloc", "-I", "true"], tmp_path)
    refused = last_job(c)
    check_case(c, "immediate", "srun -I true", ["srun", "-I", "true"], tmp_path)
    check_case(c, "immediate", "SLURM_EXIT_IMMEDIATE=7 salloc -I true", ["salloc", "-I", "true"], tmp_path,
               env={"SLURM_EXIT_IMMEDIATE": "7"})
    srun = c.run("srun", "-I", "true", cwd=tmp_path, env={"SLURM_EXIT_IMMEDIATE": "7"})  # (22.05.8: rc 7 too)
    assert (srun.returncode, srun.stderr) == (7, "srun: error: Unable to allocate resources: Requested nodes are busy\n")
    # The job stays, FAILED with BadConstraints and exit code 1 (22.05's squeue and sacct).
    squeue = c.run("squeue", "-h", "-t", "all", "-j", str(refused["job_id"]), "-o", "%j %t %r", check=True)
    assert squeue.stdout == "interactive F BadConstraints\n"
    sacct = c.run("sacct", "-X", "-n", "-P", "-j", str(refused["job_id"]), "-o", "JobName,State,ExitCode",
                  check=True)
    assert sacct.stdout == "interactive|FAILED|1:0\n"
    # Acted on: no longer kept as an option plurm does not act on.
    shown = c.run("scontrol", "show", "job", str(refused["job_id"]), check=True).stdout
    assert "NotActedOn" not in shown and "ExitCode=1:0" in shown


def test_immediate_seconds_wait_then_cancel_on_the_client(small: Cluster, busy: int, tmp_path: Path) -> None:
    c = small
    asked = time.monotonic()
    check_case(c, "immediate", "salloc -I2 true", ["salloc", "-I2", "true"], tmp_path)
    assert time.monotonic() - asked >= 2  # it waited its two seconds first
    cancelled = last_job(c)
    # (srun's: the same wait; its exit status under SLURM_EXIT_IMMEDIATE is srun.py's to pass on)
    srun = c.run("srun", "-I2", "true", cwd=tmp_path)
    lines, rc = reference("immediate", "srun -I2 true")
    assert (srun.returncode, norm(srun.stdout + srun.stderr)) == (rc, lines)
    squeue = c.run("squeue", "-h", "-t", "all", "-j", str(cancelled["job_id"]), "-o", "%j %t %r", check=True)
    assert squeue.stdout == "interactive CA Resources\n"
    sacct = c.run("sacct", "-X", "-n", "-P", "-j", str(cancelled["job_id"]), "-o", "State,ExitCode", check=True)
    assert re.fullmatch(r"CANCELLED by \d+\|0:0\n", sacct.stdout), sacct.stdout


def test_immediate_behind_a_job_of_higher_priority(small: Cluster, tmp_path: Path) -> None:
    """Nodes are free, but a job of higher priority waits first: 22.05 says so."""
    c = small
    first = c.sbatch("--exclusive", "-w", "n1", "-o", "/dev/null", "--wrap", "sleep 300", cwd=tmp_path)
    c.wait_state(first, "RUNNING")
    wide = c.sbatch("--exclusive", "-N2", "-o", "/dev/null", "--wrap", "true", cwd=tmp_path)
    wait_for(lambda: c.job(wide).get("reason") == "Resources", what="the wide job's reason")
    try:
        title = "salloc -I --nice=1000 true (free nodes, a higher priority job waiting)"
        check_case(c, "priority", title, ["salloc", "-I", "--nice=1000", "true"], tmp_path)
        check_case(c, "priority", "srun -I --nice=1000 true", ["srun", "-I", "--nice=1000", "true"], tmp_path)
    finally:
        c.run("scancel", str(first), str(wide))
        c.wait_idle()


def test_immediate_is_granted_when_the_nodes_are_free(small: Cluster, tmp_path: Path) -> None:
    check_case(small, "immediate", "salloc -I true (nodes free)", ["salloc", "-I", "true"], tmp_path)
    proc = small.run("srun", "-I", "hostname", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, "")
    # --immediate=0 is off: an ordinary request (granted here at once, no refusal).
    proc = small.run("salloc", "--immediate=0", "true", cwd=tmp_path)
    assert proc.returncode == 0 and "Granted job allocation" in proc.stderr


# ------------------------------------------------------------------ salloc -K
def salloc_then_scancel(c: Cluster, tmp_path: Path, *options: str, sleep: int = 4) -> tuple[int, list[str]]:
    """salloc OPTIONS trapper.sh, scancel'ed once its command runs: (status, output lines)."""
    trapper = tmp_path / "trapper.sh"
    trapper.write_text(TRAPPER.format(sleep=sleep))
    trapper.chmod(0o755)
    started = tmp_path / "started"
    proc = subprocess.Popen(command("salloc") + list(options) + ["sh", "-c", f"touch {started}; exec {trapper}"],
                            cwd=tmp_path, env=c.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(started.exists, what="salloc's command")
        c.run("scancel", str(last_job(c)["job_id"]), check=True)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, norm(out)


@pytest.mark.parametrize("options", [("-K",), ("-KUSR1",), ("--kill-command=TERM",)])
def test_kill_command_signals_the_command_when_the_allocation_is_revoked(
        small: Cluster, tmp_path: Path, options: tuple[str, ...]) -> None:
    lines, rc = reference("kill", f"salloc {' '.join(options)} trapper.sh (scancel after 2 s)")
    # (sleep 300: only the signal ends the command in time)
    assert salloc_then_scancel(small, tmp_path, *options, sleep=300) == (rc, lines)


def test_without_kill_command_the_command_runs_on(small: Cluster, tmp_path: Path) -> None:
    lines, rc = reference("kill", "salloc  trapper.sh (scancel after 2 s)")
    assert salloc_then_scancel(small, tmp_path) == (rc, lines)


def test_kill_command_signals_the_whole_command_group(small: Cluster, tmp_path: Path) -> None:
    """The command's children get the signal too (22.05 signals the process group)."""
    pid_file = tmp_path / "child.pid"
    trapper = tmp_path / "parent.sh"
    trapper.write_text(f"#!/bin/sh\nsleep 300 &\necho $! > {pid_file}\nwait\n")
    trapper.chmod(0o755)
    proc = subprocess.Popen(command("salloc") + ["-K", str(trapper)], cwd=tmp_path, env=small.env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: pid_file.exists() and pid_file.read_text().strip() != "", what="the child's pid")
        child = int(pid_file.read_text())
        small.run("scancel", str(last_job(small)["job_id"]), check=True)
        assert proc.wait(timeout=60) == 1  # the command killed by SIGTERM: 1 (22.05)
        wait_for(lambda: not Path(f"/proc/{child}").exists() or
                 Path(f"/proc/{child}/stat").read_text().split()[2] == "Z", what="the child's end")
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize("value", ["FOO", "0"])
def test_kill_command_refuses_a_signal_it_does_not_know(small: Cluster, tmp_path: Path, value: str) -> None:
    title = "salloc -KFOO true" if value == "FOO" else "salloc --kill-command=0 true"
    argv = ["salloc", "-KFOO", "true"] if value == "FOO" else ["salloc", "--kill-command=0", "true"]
    check_case(small, "kill", title, argv, tmp_path)


@pytest.mark.slow
def test_kill_command_at_the_time_limit(small: Cluster, tmp_path: Path) -> None:
    """-t1: a minute, then the time limit's own words (captures_timelimit.txt: salloc's lines)."""
    trapper = tmp_path / "trapper.sh"
    trapper.write_text(TRAPPER.format(sleep=300))
    trapper.chmod(0o755)
    proc = small.run("salloc", "-K", "-t1", str(trapper), cwd=tmp_path, timeout=200)
    lines, rc = reference("timelimit", "salloc -K -t1 trapper2.sh (by hand, in the background)")
    ours = norm(proc.stdout + proc.stderr)
    assert (proc.returncode, [x for x in ours if x.startswith("salloc:")]) == (
        rc, [x for x in lines if x.startswith("salloc:")]), ours
    assert "got TERM" in ours


@pytest.mark.parametrize("name", ["HUP", "INT", "KILL", "TERM", "USR1"])
def test_salloc_exit_status_of_a_command_killed_by_a_signal(small: Cluster, tmp_path: Path, name: str) -> None:
    """22.05: SIGHUP, SIGINT, SIGQUIT and SIGKILL are the user's doing (0), any other signal 1."""
    _, rc = reference("status", f"salloc sh -c 'kill -{name} $$'")
    proc = small.run("salloc", "sh", "-c", f"kill -{name} $$", cwd=tmp_path)
    assert proc.returncode == rc, (name, proc)


def test_immediate_heterogeneous_allocation_is_refused(small: Cluster, tmp_path: Path) -> None:
    """22.05 never starts a hetjob at once: `salloc -I A : B` is refused, free nodes too."""
    check_case(small, "het", "salloc -I -N1 : -N1 true (nodes free)", ["salloc", "-I", "-N1", ":", "-N1", "true"],
               tmp_path)
    assert small.request("job_info", {})["jobs"] == []  # (no job was made)


@pytest.mark.parametrize("option", ["-H", "--begin=now+1hour", "-N9"])
def test_immediate_job_that_may_not_start_yet_is_refused_with_its_cause(small: Cluster, tmp_path: Path,
                                                                        option: str) -> None:
    check_case(small, "ineligible", f"salloc -I {option} true", ["salloc", "-I", option, "true"], tmp_path)


@pytest.mark.parametrize("prog,value", [("salloc", "abc"), ("salloc", "-5"), ("srun", "abc")])
def test_immediate_takes_only_a_number(small: Cluster, tmp_path: Path, prog: str, value: str) -> None:
    check_case(small, "values", f"{prog} --immediate={value} true", [prog, f"--immediate={value}", "true"], tmp_path)
    assert small.request("job_info", {})["jobs"] == []  # (nothing was asked for)


def test_kill_command_on_a_terminal(small: Cluster, tmp_path: Path) -> None:
    """On a terminal the command has the terminal (it reads from it) and still gets SIGTERM
    (22.05.8 sent SIGTERM there too, not the man page's SIGHUP): the -K case's words."""
    import pty
    import select

    trapper = tmp_path / "trapper.sh"
    trapper.write_text(TRAPPER.format(sleep=300))
    trapper.chmod(0o755)
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(tmp_path)
        argv = command("salloc") + ["-K", "sh", "-c", f"read x; echo read $x; exec {trapper}"]
        os.execvpe(argv[0], argv, small.env)
    out = b""

    def read_until(text: bytes) -> None:
        nonlocal out
        deadline = time.monotonic() + 30
        while text not in out and time.monotonic() < deadline:
            if select.select([fd], [], [], 0.2)[0]:
                try:
                    data = os.read(fd, 4096)
                except OSError:
                    return
                if not data:
                    return
                out += data

    try:
        read_until(b"Granted job allocation")
        read_until(b"\r\n")  # (the whole line first: the terminal echoes what is typed at once)
        os.write(fd, b"hello\n")
        read_until(b"read hello")
        small.run("scancel", str(last_job(small)["job_id"]), check=True)
        read_until(b"got TERM")
    finally:
        status = _reap(pid)
        os.close(fd)
    lines, rc = reference("kill", "salloc -K trapper.sh (scancel after 2 s)")
    ours = [line for line in norm(out.decode().replace("\r\n", "\n")) if line != "hello"]
    assert (os.waitstatus_to_exitcode(status), ours) == (rc, [lines[0], "read hello", *lines[1:]])


def _reap(pid: int) -> int:
    """The child's wait status; killed first if it has not ended within 30 s."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.05)
    os.kill(pid, 9)
    return os.waitpid(pid, 0)[1]
