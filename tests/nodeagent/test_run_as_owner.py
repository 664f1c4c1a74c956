"""Jobs run as their owners: real processes as the real test users (plurmta, plurmtb).

Each test starts a job's processes with the node daemon's own functions
(launch.start_batch, launch.start_task, prolog.NodeScripts) and checks, from the job's
own output, whom it ran as and what it could open.  The users come from the
``test_users`` fixture (created with useradd as root; skipped otherwise).
"""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from plurm.nodeagent import launch, prolog
from plurm.wire import protocol

from plurmtest import Cluster, write_script

WHERE = {"cluster": "test", "conf_path": "/nonexistent/slurm.conf", "ctld_host": "localhost", "ctld_port": 6817}
NODE = "n1"


@pytest.fixture
def shared() -> Iterator[Path]:
    """A directory every user can reach (pytest's tmp_path is root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="plurm-owner-", dir="/tmp"))
    path.chmod(0o755)
    (path / "spool").mkdir(mode=0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def user_dir(base: Path, name: str, owner) -> Path:
    path = base / name
    path.mkdir()
    os.chown(path, owner.uid, owner.gid)
    return path


def launch_msg(owner, work_dir: Path, script: str, *, job_id: int = 7, environment: dict | None = None,
               **fields) -> protocol.LaunchJob:
    job = {"job_id": job_id, "partition": "debug", "nodes": [NODE], "cpus": [1], "tasks": [1],
           "spec": {"name": "owner", "user": owner.name, "user_id": owner.uid, "group_id": owner.gid,
                    "work_dir": str(work_dir)}}
    env = {"PATH": "/usr/bin:/bin"} if environment is None else environment
    return protocol.LaunchJob(job_id=job_id, job=job, script=script, work_dir=str(work_dir), uid=owner.uid,
                              gid=owner.gid, environment=env, **fields)


def run_batch(msg: protocol.LaunchJob, base: Path, **kw) -> int:
    proc = launch.start_batch(msg, NODE, str(base / "spool"), WHERE, **kw)
    return proc.wait(timeout=60)


def values(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


REPORT = """#!/bin/sh
echo uid=$(id -u)
echo gid=$(id -g)
echo groups=$(id -G)
echo home=$HOME
echo user=$USER
echo logname=$LOGNAME
echo umask=$(umask)
echo slurm_umask=${SLURM_UMASK-unset}
echo task_pid=$SLURM_TASK_PID self=$$
echo pwd=$(pwd)
"""


def test_batch_runs_as_owner_with_groups_environment_and_umask(test_users, shared: Path) -> None:
    a = test_users["plurmta"]
    work = user_dir(shared, "work", a)
    msg = launch_msg(a, work, REPORT, environment={"PATH": "/usr/bin:/bin", "SLURM_UMASK": "0027"})
    assert run_batch(msg, shared) == 0
    out = work / "slurm-7.out"
    seen = values(out.read_text())
    assert seen["uid"] == str(a.uid)
    assert seen["gid"] == str(a.gid)
    assert set(seen["groups"].split()) == {str(g) for g in a.groups}
    assert str(grp.getgrnam("plurmtgrp").gr_gid) in seen["groups"].split()
    assert (seen["home"], seen["user"], seen["logname"]) == (a.home, a.name, a.name)
    assert seen["umask"] == "0027"
    assert seen["slurm_umask"] == "unset"  # applied, not shown to the script (as slurmstepd)
    assert seen["pwd"] == str(work)
    pid, self_pid = seen["task_pid"].split(" self=")
    assert pid == self_pid  # SLURM_TASK_PID: the script's own pid
    info = out.stat()
    assert (info.st_uid, info.st_gid) == (a.uid, a.gid)
    assert stat.S_IMODE(info.st_mode) == 0o640  # 0666 & ~027: created by the job, not by root


def test_export_none_takes_home_from_passwd_all_keeps_submitted(test_users, shared: Path) -> None:
    a = test_users["plurmta"]
    work = user_dir(shared, "work", a)
    submitted = {"PATH": "/usr/bin:/bin", "HOME": "/elsewhere", "USER": "someone"}
    run_batch(launch_msg(a, work, REPORT, environment=dict(submitted, SLURM_EXPORT_ENV="NONE"),
                         stdout="none.out"), shared)
    run_batch(launch_msg(a, work, REPORT, environment=dict(submitted), stdout="all.out"), shared)
    none, everything = values((work / "none.out").read_text()), values((work / "all.out").read_text())
    assert (none["home"], none["user"], none["logname"]) == (a.home, a.name, a.name)
    assert (everything["home"], everything["user"], everything["logname"]) == ("/elsewhere", "someone", a.name)
    assert none["umask"] == "0022"  # no SLURM_UMASK: the default


def test_stdin_the_owner_cannot_read_fails_the_launch(test_users, shared: Path) -> None:
    a = test_users["plurmta"]
    work = user_dir(shared, "work", a)
    msg = launch_msg(a, work, "#!/bin/sh\ncat\n", stdin="/etc/shadow")
    with pytest.raises(launch.LaunchError, match="Could not open stdin file /etc/shadow: Permission denied"):
        run_batch(msg, shared)


def test_output_into_a_root_only_directory_fails_and_creates_nothing(test_users, shared: Path) -> None:
    a = test_users["plurmta"]
    work = user_dir(shared, "work", a)
    private = shared / "rootonly"
    private.mkdir(mode=0o700)
    for field in ("stdout", "stderr"):
        target = private / f"{field}.txt"
        msg = launch_msg(a, work, "#!/bin/sh\necho ran\n", **{field: str(target)})
        with pytest.raises(launch.LaunchError, match=f"Could not open {field} file {target}: Permission denied"):
            run_batch(msg, shared)
        assert not target.exists()
    missing = shared / "nodir" / "x.out"
    with pytest.raises(launch.LaunchError, match="No such file or directory"):
        run_batch(launch_msg(a, work, "#!/bin/sh\n", stdout=str(missing)), shared)


def test_chdir_the_owner_cannot_enter_goes_to_tmp(test_users, shared: Path) -> None:
    a = test_users["plurmta"]
    outdir = user_dir(shared, "out", a)
    private = shared / "rootonly"
    private.mkdir(mode=0o700)
    msg = launch_msg(a, private, "#!/bin/sh\necho pwd=$(pwd)\n", stdout=str(outdir / "o.txt"))
    assert run_batch(msg, shared) == 0
    lines = (outdir / "o.txt").read_text().splitlines()
    assert lines == [f"slurmstepd: error: couldn't chdir to `{private}': Permission denied: going to /tmp instead",
                     "pwd=/tmp"]
    msg = launch_msg(a, shared / "gone", "#!/bin/sh\npwd\n", stdout=str(outdir / "g.txt"))
    run_batch(msg, shared)
    assert (outdir / "g.txt").read_text().splitlines()[0].endswith(": No such file or directory: going to /tmp instead")


def test_one_owner_cannot_write_into_another_owners_files(test_users, shared: Path) -> None:
    a, b = test_users["plurmta"], test_users["plurmtb"]
    adir = user_dir(shared, "a", a)
    adir.chmod(0o755)
    (adir / "mine.out").write_text("a's\n")
    os.chown(adir / "mine.out", a.uid, a.gid)
    (adir / "mine.out").chmod(0o644)
    bwork = user_dir(shared, "b", b)
    with pytest.raises(launch.LaunchError, match="Permission denied"):
        run_batch(launch_msg(b, bwork, "#!/bin/sh\necho b\n", stdout=str(adir / "mine.out")), shared)
    assert (adir / "mine.out").read_text() == "a's\n"


def test_unknown_uid_and_mismatched_owner_are_refused(test_users, shared: Path) -> None:
    a = test_users["plurmta"]
    unknown = next(uid for uid in range(54321, 60000) if not _known(uid))
    msg = launch_msg(a, shared, "#!/bin/sh\n")
    msg.uid = unknown
    msg.job["spec"]["user_id"] = unknown
    with pytest.raises(launch.LaunchError, match="^User not found on host$"):
        run_batch(msg, shared)
    msg = launch_msg(a, shared, "#!/bin/sh\ntouch /root/owned\n")
    msg.uid = 0  # a launch for root of a job that is not root's
    with pytest.raises(launch.LaunchError, match="does not match the job's owner"):
        run_batch(msg, shared)
    assert not os.path.exists("/root/owned")


def test_plurmd_that_is_not_root_runs_only_its_own_users_jobs(test_users, monkeypatch) -> None:
    a, b = test_users["plurmta"], test_users["plurmtb"]
    monkeypatch.setattr(os, "geteuid", lambda: a.uid)
    mine = launch.owner_of(a.uid, a.gid, {})
    assert mine.switch is False and mine.popen_kwargs() == {"umask": 0o022}
    with pytest.raises(launch.LaunchError, match=r"plurmd runs as uid \d+, not root: .*plurmtb"):
        launch.owner_of(b.uid, b.gid, {})


def _known(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True


def write_program(path: Path, body: str) -> str:
    path.write_text(body)
    path.chmod(0o755)
    return str(path)


TASK_PROLOG = """#!/bin/sh
echo "export FROM_PROLOG=a b \\$(not evaluated)"
echo "unset DROPME"
echo "export 1BAD=x"
echo "print prolog uid=$(id -u) context=$SLURM_SCRIPT_CONTEXT pid=$SLURM_TASK_PID pwd=$(pwd)"
"""


def test_task_prolog_sets_environment_and_prints_as_the_owner(test_users, shared: Path) -> None:
    a = test_users["plurmta"]
    work = user_dir(shared, "work", a)
    task_prolog = write_program(shared / "task_prolog", TASK_PROLOG)
    script = "#!/bin/sh\necho from=$FROM_PROLOG\necho drop=${DROPME-unset}\necho self=$$\n"
    msg = launch_msg(a, work, script, environment={"PATH": "/usr/bin:/bin", "DROPME": "1"})
    assert run_batch(msg, shared, task_prolog=task_prolog) == 0
    lines = (work / "slurm-7.out").read_text().splitlines()
    pid = lines[-1].removeprefix("self=")
    assert lines == [f"prolog uid={a.uid} context=prolog_task pid={pid} pwd={work}",
                     "from=a b $(not evaluated)", "drop=unset", f"self={pid}"]


def test_failing_task_prolog_cancels_the_task(test_users, shared: Path) -> None:
    a = test_users["plurmta"]
    work = user_dir(shared, "work", a)
    task_prolog = write_program(shared / "task_prolog", "#!/bin/sh\nexit 3\n")
    code = run_batch(launch_msg(a, work, "#!/bin/sh\necho ran\n"), shared, task_prolog=task_prolog)
    assert code == 3
    assert (work / "slurm-7.out").read_text() == "slurmstepd: error: TaskProlog failed status=3\n"


def test_step_task_runs_as_owner_in_its_directory(test_users, shared: Path) -> None:
    a = test_users["plurmta"]
    work = user_dir(shared, "work", a)
    owner = launch.owner_of(a.uid, a.gid, {"SLURM_UMASK": "0077"})
    task_prolog = write_program(shared / "task_prolog", TASK_PROLOG)
    env = owner.environment({"PATH": "/usr/bin:/bin", "DROPME": "1"})
    report = ("echo uid=$(id -u); echo groups=$(id -G); echo umask=$(umask); echo pwd=$(pwd); echo home=$HOME; "
              "echo from=$FROM_PROLOG; echo drop=${DROPME-unset}; echo pid=$SLURM_TASK_PID self=$$")
    proc = launch.start_task(["sh", "-c", report], env, str(work), owner, task_prolog)
    out, err = proc.communicate(timeout=60)
    printed, *lines = out.decode().splitlines()
    assert printed.startswith(f"prolog uid={a.uid} context=prolog_task pid={proc.pid} pwd={work}")
    seen = values("\n".join(lines))
    assert seen["uid"] == str(a.uid)
    assert set(seen["groups"].split()) == {str(g) for g in a.groups}
    assert (seen["umask"], seen["pwd"], seen["home"]) == ("0077", str(work), a.home)
    assert (seen["from"], seen["drop"]) == ("a b $(not evaluated)", "unset")
    assert seen["pid"] == f"{proc.pid} self={proc.pid}"  # the task's pid, not stepd's
    assert err == b""
    private = shared / "rootonly"
    private.mkdir(mode=0o700)
    proc = launch.start_task(["no-such-program"], env, str(private), owner)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert err.decode().splitlines() == [
        f"slurmstepd: error: couldn't chdir to `{private}': Permission denied: going to /tmp instead",
        "slurmstepd: error: execve(): no-such-program: No such file or directory"]


class FakeDaemonConf:
    def __init__(self, **options: str) -> None:
        self.options = options

    def get(self, key: str, default=None):
        return self.options.get(key, default)


def test_prolog_and_epilog_run_as_plurmd_with_the_jobs_environment(test_users, shared: Path, monkeypatch) -> None:
    a = test_users["plurmta"]
    record = shared / "record"
    body = f"#!/bin/sh\n{{ echo uid=$(id -u); env | sort; }} > {record}.$SLURM_SCRIPT_CONTEXT\n"
    scripts = prolog.NodeScripts.from_conf(FakeDaemonConf(Prolog=write_program(shared / "prolog", body),
                                                          Epilog=write_program(shared / "epilog", body)))
    drained: list[tuple[str, str]] = []
    monkeypatch.setattr(prolog, "drain", lambda conf, node, reason: drained.append((node, reason)))
    msg = launch_msg(a, shared, "#!/bin/sh\n")
    assert scripts.run_prolog(msg.job, NODE, WHERE["conf_path"], WHERE) is None
    assert scripts.run_epilog(msg.job_id, NODE, WHERE["conf_path"]) is None
    assert scripts.run_epilog(msg.job_id, NODE, WHERE["conf_path"]) is None  # once per job
    for context in ("prolog_slurmd", "epilog_slurmd"):
        seen = values(Path(f"{record}.{context}").read_text())
        assert seen["uid"] == "0"
        assert seen["SLURM_JOB_ID"] == "7" and seen["SLURM_JOB_UID"] == str(a.uid)
        assert seen["SLURM_JOB_USER"] == a.name and seen["SLURM_JOB_PARTITION"] == "debug"
        assert seen["SLURMD_NODENAME"] == NODE and seen["SLURM_SCRIPT_CONTEXT"] == context
        assert "PATH" not in seen and "HOME" not in seen  # no search path, nothing of plurmd's
    assert drained == []


def test_failing_prolog_and_epilog_drain_the_node(test_users, shared: Path, monkeypatch) -> None:
    a = test_users["plurmta"]
    scripts = prolog.NodeScripts.from_conf(FakeDaemonConf(Prolog=write_program(shared / "p", "#!/bin/sh\nexit 1\n"),
                                                          Epilog=write_program(shared / "e", "#!/bin/sh\nexit 2\n")))
    drained: list[tuple[str, str]] = []
    monkeypatch.setattr(prolog, "drain", lambda conf, node, reason: drained.append((node, reason)))
    job = launch_msg(a, shared, "#!/bin/sh\n").job
    assert "failed: status 1" in scripts.run_prolog(job, NODE, WHERE["conf_path"], WHERE)
    assert "failed: status 2" in scripts.run_epilog(job["job_id"], NODE, WHERE["conf_path"])
    assert drained == [(NODE, "Prolog error"), (NODE, "Epilog error")]


def test_a_job_of_roots_still_runs_as_root(cluster: Cluster, workdir: Path) -> None:
    write_script(workdir, "root.sh", "#!/bin/sh\necho $(id -u) $(id -g) $HOME $USER\n")
    job_id = cluster.sbatch("root.sh", cwd=workdir)
    cluster.wait_state(job_id, "COMPLETED")
    out = workdir / f"slurm-{job_id}.out"
    root = pwd.getpwuid(0)
    assert out.read_text().split()[:2] == ["0", "0"]
    assert os.stat(out).st_uid == 0
    assert root.pw_name in out.read_text() or os.environ.get("USER", "") in out.read_text()

