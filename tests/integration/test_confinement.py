"""Jobs confined to what they were given: real daemons, real jobs, real cgroups (v1), as root.

A hand-written slurm.conf (ProctrackType=proctrack/cgroup, TaskPlugin=task/cgroup), a
cgroup.conf constraining cores, RAM and devices, and a gres.conf whose two "GPUs" are device
nodes made with mknod (character devices of a major no driver has: opening an allowed one
fails ENXIO, a denied one EPERM).  Two NodeNames share the host, so plurmd's cgroups are under
``slurm_cgt1`` (never a real slurmd's ``slurm``); only cgt1 runs.  Every cgroup and process
left is removed at the end, even when a test fails.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from plurm.nodeagent.confinement import cgroup_prefix
from plurmtest import Cluster, command, free_ports, wait_for, write_key

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="cgroups are root's to create: these tests run as root only"),
    pytest.mark.skipif(not os.path.isdir("/sys/fs/cgroup/memory/") or not os.path.isdir("/sys/fs/cgroup/freezer"),
                       reason="needs the cgroup v1 memory and freezer hierarchies mounted at /sys/fs/cgroup"),
]

NODE = "cgt1"
PREFIXES = f"slurm_{NODE}_*"  # plurmd tags its prefix with its spool's path: one per test's cluster
CONTROLLERS = ("cpuset", "memory", "devices", "freezer", "cpuacct", "cpu", "pids", "blkio")
GPU_MAJOR = 240  # "local/experimental use": no driver on the host has it


def _cgroup_dirs() -> list[Path]:
    found = []
    for controller in CONTROLLERS:
        for root in (Path("/sys/fs/cgroup") / controller).glob(PREFIXES):
            if root.is_dir():
                found.extend(sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)))
                found.append(root)
    return found


def _scrub() -> None:
    """Kill what is left in our prefix's cgroups and remove them (deepest first)."""
    tops = [p for p in Path("/sys/fs/cgroup/freezer").glob(PREFIXES) if p.is_dir()]
    for path in [p for top in tops for p in (top, *top.rglob("*"))]:
        state = path / "freezer.state"
        if state.exists():
            try:
                state.write_text("THAWED")
            except OSError:
                pass
    for _ in range(50):
        pids = set()
        for path in _cgroup_dirs():
            procs = path / "cgroup.procs"
            if procs.exists():
                pids.update(int(p) for p in procs.read_text().split())
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)
    for path in _cgroup_dirs():
        try:
            path.rmdir()
        except OSError:
            pass


def _job_dirs(job_id: int) -> list[Path]:
    return [p for p in _cgroup_dirs() if p.name == f"job_{job_id}"]


def _responding(cluster: Cluster) -> set[str]:
    try:
        return {n["name"] for n in cluster.request("node_info", {})["nodes"] if n.get("responding")}
    except Exception:
        return set()


class Confined:
    """The cluster, and plurmd's process (restartable)."""

    def __init__(self, tmp: Path, proctrack: str = "proctrack/cgroup", plurm_conf: str = "",
                 devices: list[tuple[int, int]] | None = None, constrain_devices: bool = True,
                 cgroup_conf: str = "CgroupPlugin=cgroup/v1\n") -> None:
        ctld, p1, p2 = free_ports(3)
        self.tmp = tmp
        self.prefix = cgroup_prefix(NODE, str(tmp / "spool" / NODE), True)
        self.dev = tmp / "dev"
        self.dev.mkdir()
        for i, (major, minor) in enumerate(devices or [(GPU_MAJOR, 0), (GPU_MAJOR, 1)]):
            os.mknod(self.dev / f"gpu{i}", 0o666 | 0o020000, os.makedev(major, minor))
        self.conf = tmp / "slurm.conf"
        self.conf.write_text(f"""ClusterName=confined
SlurmctldHost=ctl(127.0.0.1)
SlurmctldPort={ctld}
StateSaveLocation={tmp}/state
SlurmdSpoolDir={tmp}/spool/%n
ProctrackType={proctrack}
TaskPlugin=task/cgroup,task/affinity
JobAcctGatherFrequency=1
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
NodeName=cgt[1-2] NodeHostname=localhost NodeAddr=127.0.0.1 Port={p1},{p2} CPUs=2 RealMemory=2000 Gres=gpu:2
PartitionName=main Nodes={NODE} Default=YES MaxTime=10:00 State=UP
""")
        (tmp / "cgroup.conf").write_text(cgroup_conf + "ConstrainCores=yes\nConstrainRAMSpace=yes\n"
                                         f"ConstrainDevices={'yes' if constrain_devices else 'no'}\n")
        (tmp / "gres.conf").write_text(f"NodeName={NODE} Name=gpu File={self.dev}/gpu[0-1]\n")
        if plurm_conf:
            (tmp / "plurm.conf").write_text(plurm_conf)
        write_key(tmp / "slurm.key")
        self.env = dict(os.environ, SLURM_CONF=str(self.conf))
        self.env.pop("SLURM_JOB_ID", None)
        self.cluster = Cluster(tmp, self.conf, self.env)
        self.log = open(tmp / "daemons.log", "ab")
        self.ctld = subprocess.Popen(command("plurmctld") + ["-D", "-f", str(self.conf)], env=self.env,
                                     stdout=self.log, stderr=self.log)
        self.plurmd: subprocess.Popen | None = None
        self.start_plurmd()
        self.work = tmp / "work"
        self.work.mkdir()

    def start_plurmd(self) -> None:
        self.plurmd = subprocess.Popen(command("plurmd") + ["-D", "-N", NODE], env=self.env, stdout=self.log,
                                       stderr=self.log)
        wait_for(lambda: NODE in _responding(self.cluster), timeout=30, what="the node to register")

    def sbatch(self, *args: str) -> int:
        return self.cluster.sbatch(*args, cwd=self.work)

    def daemon_log(self) -> str:
        return (self.tmp / "daemons.log").read_text(errors="replace")

    def stop(self) -> None:
        for proc in (self.plurmd, self.ctld):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in (self.plurmd, self.ctld):
            if proc is not None:
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        from plurm.nodeagent import jobstate

        jobstate.kill_recorded(str(self.tmp / "spool" / NODE))
        self.log.close()


@pytest.fixture
def confined(tmp_path: Path) -> Iterator[Confined]:
    _scrub()
    c = Confined(tmp_path)
    try:
        yield c
    finally:
        c.stop()
        _scrub()
        subprocess.run(["pkill", "-9", "-f", f"plurm-confinement-{os.getpid()}"], check=False)


MARK = f"plurm-confinement-{os.getpid()}"  # in the command lines of the tests' processes


def _daemon(mark: str) -> str:
    """A shell line that leaves a daemonized process (its own session, no terminal, stdio
    closed), named by ``mark`` in its command line."""
    return f"setsid sh -c 'sleep 1000; : {mark}' </dev/null >/dev/null 2>&1"


def _running(mark: str) -> bool:
    return subprocess.run(["pgrep", "-f", mark], capture_output=True).returncode == 0


def _sacct_state(c: Confined, job_id: int) -> str:
    return c.cluster.job(job_id).get("state", "")


# Two processes (not threads: the GIL would hold them to one CPU anyway) spinning for 2 s of wall
# time: the CPU seconds they got, over the wall time.
SPIN_PY = ("import os, time\n"
           "print(sorted(os.sched_getaffinity(0)))\n"
           "t0 = time.monotonic()\n"
           "for _ in range(2):\n"
           "    if os.fork() == 0:\n"
           "        end = time.monotonic() + 2\n"
           "        while time.monotonic() < end: pass\n"
           "        os._exit(0)\n"
           "os.wait(); os.wait()\n"
           "t = os.times()\n"
           "print(round(t.children_user + t.children_system, 3), round(time.monotonic() - t0, 3))\n")


def test_one_cpu_job_sees_one_cpu_and_gets_at_most_one(confined: Confined) -> None:
    (confined.work / "spin.py").write_text(SPIN_PY)
    job_id = confined.sbatch("-c1", "--mem=200M", "--wrap", "python3 spin.py")
    confined.cluster.wait_state(job_id, "COMPLETED", timeout=60)
    lines = (confined.work / f"slurm-{job_id}.out").read_text().split("\n")
    cpus = eval(lines[0])
    assert len(cpus) == 1
    cpu_s, wall_s = map(float, lines[1].split())
    print(f"1-CPU job: {cpu_s} CPU-s in {wall_s} s wall ({cpu_s / wall_s:.2f} CPUs)")
    assert cpu_s <= 1.3 * wall_s  # unconfined, on this 2-CPU host, the two get ~1.9 CPUs (measured)
    assert not _job_dirs(job_id)


def test_memory_hog_is_oom_killed_and_the_node_stays_up(confined: Confined) -> None:
    job_id = confined.sbatch("--mem=100M", "--wrap",
                             "python3 -c 'x = bytearray(400 << 20); import time; time.sleep(5)'")
    job = confined.cluster.wait_state(job_id, {"OUT_OF_MEMORY", "FAILED", "COMPLETED"}, timeout=60)
    out = (confined.work / f"slurm-{job_id}.out").read_text()
    assert (f"slurmstepd-{NODE}: error: Detected 1 oom-kill event(s) in StepId={job_id}.batch. Some of your "
            "processes may have been killed by the cgroup out-of-memory handler.\n") in out, out
    assert job["state"] == "OUT_OF_MEMORY", job
    nodes = {n["name"]: n for n in confined.cluster.request("node_info", {})["nodes"]}
    assert nodes[NODE].get("responding") and "DRAIN" not in str(nodes[NODE].get("state", "")).upper()
    assert not _job_dirs(job_id)


def test_daemonized_children_die_with_the_job(confined: Confined) -> None:
    job_id = confined.sbatch("--mem=100M", "--wrap",
                             f"{_daemon(MARK)} & sleep 1; pgrep -f {MARK} >/dev/null && echo daemon running")
    confined.cluster.wait_state(job_id, "COMPLETED", timeout=60)
    assert "daemon running" in (confined.work / f"slurm-{job_id}.out").read_text()
    wait_for(lambda: not _running(MARK), timeout=10, what="the daemonized process to be gone")
    assert not _job_dirs(job_id)


def test_gpu_job_opens_only_its_device(confined: Confined) -> None:
    check = ("import errno, sys\n"
             "for path in sys.argv[1:]:\n"
             "    try:\n"
             "        open(path, 'rb').close(); print(path, 'opened')\n"
             "    except OSError as exc:\n"
             "        print(path, errno.errorcode[exc.errno])\n")
    (confined.work / "devs.py").write_text(check)
    job_id = confined.sbatch("--gres=gpu:1", "--mem=100M", "--wrap",
                             f"python3 devs.py {confined.dev}/gpu0 {confined.dev}/gpu1")
    confined.cluster.wait_state(job_id, "COMPLETED", timeout=60)
    seen = dict(line.split() for line in (confined.work / f"slurm-{job_id}.out").read_text().splitlines())
    mine, other = sorted(seen, key=lambda p: seen[p] == "EPERM")
    assert seen[mine] != "EPERM" and seen[other] == "EPERM", seen  # (its own: ENXIO, no driver)


def _freezer_state(job_id: int) -> str:
    paths = [p for p in _job_dirs(job_id) if "/freezer/" in str(p)]
    return (paths[0] / "freezer.state").read_text().strip() if paths else ""


def test_suspend_freezes_and_resume_thaws(confined: Confined) -> None:
    counter = confined.work / "count"
    job_id = confined.sbatch("--mem=100M", "--wrap", f"i=0; while :; do i=$((i+1)); echo $i > {counter}; sleep 0.1; done")
    confined.cluster.wait_state(job_id, "RUNNING")
    wait_for(counter.exists, what="the job to count")
    confined.cluster.run("scontrol", "suspend", str(job_id), check=True)
    wait_for(lambda: _freezer_state(job_id) == "FROZEN", what="the job's cgroup to freeze")
    time.sleep(0.3)
    held = counter.read_text()
    time.sleep(0.5)
    assert counter.read_text() == held
    confined.cluster.run("scontrol", "resume", str(job_id), check=True)
    wait_for(lambda: _freezer_state(job_id) == "THAWED", what="the job's cgroup to thaw")
    wait_for(lambda: counter.read_text() != held, what="the job to count again")
    confined.cluster.run("scontrol", "suspend", str(job_id), check=True)  # and cancelled while frozen
    wait_for(lambda: _freezer_state(job_id) == "FROZEN", what="the job's cgroup to freeze again")
    confined.cluster.run("scancel", str(job_id), check=True)
    confined.cluster.wait_state(job_id, "CANCELLED")
    wait_for(lambda: not _job_dirs(job_id), what="the job's cgroup to go")


def test_teardown_without_plurmd_kills_the_confined_jobs(confined: Confined) -> None:
    """plurm cluster down (jobstate.kill_recorded) with plurmd gone: daemonized processes of a
    confined job die with it, and its cgroup goes (the spool's marks name it)."""
    job_id = confined.sbatch("--mem=100M", "--wrap", f"{_daemon(MARK + 'y')} & sleep 600")
    confined.cluster.wait_state(job_id, "RUNNING")
    wait_for(lambda: _running(MARK + "y"), what="the daemonized process")
    assert confined.plurmd is not None
    confined.plurmd.kill()
    confined.plurmd.wait()
    from plurm.nodeagent import jobstate

    jobstate.kill_recorded(str(confined.tmp / "spool" / NODE))
    assert not _job_dirs(job_id)
    assert not _running(MARK + "y")


def test_restarted_plurmd_still_removes_the_jobs_cgroup(confined: Confined) -> None:
    job_id = confined.sbatch("--mem=100M", "--wrap", f"{_daemon(MARK + 'x')} & sleep 4")
    confined.cluster.wait_state(job_id, "RUNNING")
    wait_for(lambda: bool(_job_dirs(job_id)) and _running(MARK + "x"), what="the job's cgroup and its daemon")
    assert confined.plurmd is not None
    confined.plurmd.kill()
    confined.plurmd.wait()
    confined.start_plurmd()
    confined.cluster.wait_state(job_id, "COMPLETED", timeout=60)
    wait_for(lambda: not _job_dirs(job_id), what="the job's cgroup to go")
    assert not _running(MARK + "x")


def test_unconfined_with_proctrack_pgid(tmp_path: Path) -> None:
    _scrub()
    c = Confined(tmp_path, proctrack="proctrack/pgid")
    try:
        # task/cgroup is still asked for: plurm confines all the same (the docstring of
        # nodeagent/confinement.py); ProctrackType=pgid with TaskPlugin=task/none is unconfined.
        c.stop()
        c.conf.write_text(c.conf.read_text().replace("TaskPlugin=task/cgroup,task/affinity", "TaskPlugin=task/none"))
        c.log = open(tmp_path / "daemons.log", "ab")
        c.ctld = subprocess.Popen(command("plurmctld") + ["-D", "-f", str(c.conf)], env=c.env, stdout=c.log,
                                  stderr=c.log)
        c.start_plurmd()
        (c.work / "spin.py").write_text(SPIN_PY)
        job_id = c.sbatch("-c1", "--mem=100M", "--wrap", "cat /proc/self/cgroup; python3 spin.py")
        c.cluster.wait_state(job_id, "COMPLETED", timeout=60)
        out = (c.work / f"slurm-{job_id}.out").read_text()
        assert c.prefix not in out and not _job_dirs(job_id)
        cpus, times = out.strip().splitlines()[-2:]
        cpu_s, wall_s = map(float, times.split())
        print(f"unconfined 1-CPU job: sees {cpus}; {cpu_s} CPU-s in {wall_s} s wall ({cpu_s / wall_s:.2f} CPUs)")
        assert len(eval(cpus)) == len(os.sched_getaffinity(0))  # (what the tests' measure compares with)
        assert "jobs run unconfined (process groups): ProctrackType=proctrack/pgid" in c.daemon_log()
    finally:
        c.stop()
        _scrub()


def test_steps_run_in_their_own_cgroup_within_the_jobs_cpus(confined: Confined) -> None:
    show = "python3 -c 'import os; print(len(os.sched_getaffinity(0)), open(\"/proc/self/cgroup\").read())'"
    job_id = confined.sbatch("-c1", "--mem=200M", "--wrap", f"srun {show}; {show}")
    confined.cluster.wait_state(job_id, "COMPLETED", timeout=60)
    out = (confined.work / f"slurm-{job_id}.out").read_text()
    assert f"memory:/{confined.prefix}/uid_0/job_{job_id}/step_0" in out, out
    assert f"memory:/{confined.prefix}/uid_0/job_{job_id}/step_batch" in out, out
    assert out.count("1 ") >= 2 and not _job_dirs(job_id)


def test_oom_in_a_step_is_told_by_srun(confined: Confined) -> None:
    job_id = confined.sbatch("--mem=100M", "--wrap", "srun python3 -c 'x = bytearray(400 << 20)'")
    confined.cluster.wait_state(job_id, {"OUT_OF_MEMORY", "FAILED", "COMPLETED"}, timeout=60)
    out = (confined.work / f"slurm-{job_id}.out").read_text()
    assert out.count(f"Detected 1 oom-kill event(s) in StepId={job_id}.0") == 1, out
    assert not _job_dirs(job_id)


def test_freeze_policy_freezes_a_leaking_job_and_resume_continues_it(tmp_path: Path) -> None:
    _scrub()
    c = Confined(tmp_path, plurm_conf="FreezePolicy=memory\nFreezeMemoryFraction=0.5\nFreezeMemoryFor=2\n")
    try:
        counter = c.work / "count"
        job_id = c.sbatch("--mem=200M", "--wrap",
                          f"python3 -c 'x = bytearray(130 << 20)\nimport time\ni = 0\nwhile True:\n"
                          f"    i += 1; open(\"{counter}\", \"w\").write(str(i)); time.sleep(0.1)'")
        wait_for(lambda: c.cluster.job(job_id).get("state") == "SUSPENDED", timeout=30, what="the policy to freeze it")
        assert _freezer_state(job_id) == "FROZEN"
        job = c.cluster.job(job_id)
        squeue = c.cluster.run("squeue", "-j", str(job_id), "-h", "-o", "%T|%r", check=True).stdout.strip()
        print("frozen:", squeue, job.get("reason"))
        assert squeue.startswith("SUSPENDED|") and "memory" in squeue, squeue
        assert f"job {job_id} frozen by the freeze policy" in c.daemon_log()
        held = counter.read_text()
        time.sleep(0.5)
        assert counter.read_text() == held
        c.cluster.run("scontrol", "resume", str(job_id), check=True)
        wait_for(lambda: counter.read_text() != held, what="the job to go on")
        time.sleep(3)  # (resumed: the policy that froze it leaves it alone from now on)
        assert c.cluster.job(job_id).get("state") == "RUNNING" and _freezer_state(job_id) == "THAWED"
        c.cluster.run("scancel", str(job_id), check=True)
        c.cluster.wait_state(job_id, "CANCELLED")
        wait_for(lambda: not _job_dirs(job_id), what="the job's cgroup to go")
    finally:
        c.stop()
        _scrub()


def test_leftover_cgroups_are_taken_over_and_another_daemons_never(confined: Confined) -> None:
    """An empty, frozen job_1 left by a cluster torn down without its plurmd is removed and
    made anew; a job_2 that holds a process (another daemon's, under the same prefix) is left
    alone and job 2 fails to launch, saying why."""
    for controller in ("freezer", "memory"):
        (Path("/sys/fs/cgroup") / controller / confined.prefix / "uid_0" / "job_1").mkdir(parents=True,
                                                                                          exist_ok=True)
    (Path("/sys/fs/cgroup/freezer") / confined.prefix / "uid_0" / "job_1" / "freezer.state").write_text("FROZEN")
    foreign = Path("/sys/fs/cgroup/freezer") / confined.prefix / "uid_0" / "job_2"
    foreign.mkdir()
    other = subprocess.Popen(["sleep", "1000"])
    try:
        (foreign / "cgroup.procs").write_text(str(other.pid))
        first = confined.sbatch("--mem=100M", "--wrap", "echo ran")
        confined.cluster.wait_state(first, "COMPLETED", timeout=60)
        second = confined.sbatch("--mem=100M", "--wrap", "echo ran")
        job = confined.cluster.wait_state(second, {"FAILED"}, timeout=60)
        assert job.get("reason") == "JobLaunchFailure"
        assert "holds another daemon's processes" in confined.daemon_log()
        assert other.poll() is None and str(other.pid) in (foreign / "cgroup.procs").read_text()
    finally:
        other.kill()
        other.wait()


def test_freeze_policy_freezes_a_job_that_holds_another_gpu_open(tmp_path: Path) -> None:
    """Devices not constrained (ConstrainDevices=no), the two "GPUs" as /dev/null's and
    /dev/zero's numbers so that they open: a --gres=gpu:1 job that holds the other one open is
    frozen by FreezePolicy=device."""
    _scrub()
    c = Confined(tmp_path, plurm_conf="FreezePolicy=device\n", devices=[(1, 3), (1, 5)], constrain_devices=False)
    try:
        job_id = c.sbatch("--gres=gpu:1", "--mem=100M", "--wrap",
                          f"exec 3<{c.dev}/gpu0 4<{c.dev}/gpu1; sleep 600")
        wait_for(lambda: c.cluster.job(job_id).get("state") == "SUSPENDED", timeout=30, what="the policy to freeze it")
        assert _freezer_state(job_id) == "FROZEN"
        reason = c.cluster.job(job_id).get("reason", "")
        print("frozen:", reason)
        assert f"opened {c.dev}/gpu" in reason and "not allocated" in reason, reason  # (just the other one)
        assert reason.count(f"{c.dev}/gpu") == 1, reason
        c.cluster.run("scancel", str(job_id), check=True)
        c.cluster.wait_state(job_id, "CANCELLED")
        wait_for(lambda: not _job_dirs(job_id), what="the job's cgroup to go")
    finally:
        c.stop()
        _scrub()


UNIFIED = Path("/sys/fs/cgroup/unified")


@pytest.mark.skipif(not (UNIFIED / "cgroup.procs").exists(), reason="needs cgroup2 mounted at /sys/fs/cgroup/unified")
def test_cgroup_v2_tracks_kills_and_freezes(tmp_path: Path) -> None:
    """CgroupPlugin=cgroup/v2 on this host's unified mount (where memory and cpuset are bound
    to v1: not constrained, warned): the job's processes in its v2 cgroup, daemonized ones
    killed at its end, suspend through cgroup.freeze."""
    c = Confined(tmp_path, cgroup_conf=f"CgroupPlugin=cgroup/v2\nCgroupMountpoint={UNIFIED}\n")
    root = UNIFIED / c.prefix
    try:
        counter = c.work / "count"
        job_id = c.sbatch("--mem=100M", "--wrap", f"{_daemon(MARK + 'v')} & cat /proc/self/cgroup; "
                                                  f"i=0; while :; do i=$((i+1)); echo $i > {counter}; sleep 0.1; done")
        c.cluster.wait_state(job_id, "RUNNING")
        wait_for(lambda: counter.exists() and _running(MARK + "v"), what="the job to count")
        c.cluster.run("scontrol", "suspend", str(job_id), check=True)
        events = root / f"job_{job_id}" / "cgroup.events"
        wait_for(lambda: "frozen 1" in events.read_text(), what="the job's v2 cgroup to freeze")
        c.cluster.run("scontrol", "resume", str(job_id), check=True)
        wait_for(lambda: "frozen 0" in events.read_text(), what="the job's v2 cgroup to thaw")
        c.cluster.run("scancel", str(job_id), check=True)
        c.cluster.wait_state(job_id, "CANCELLED")
        wait_for(lambda: not (root / f"job_{job_id}").exists(), what="the job's v2 cgroup to go")
        assert not _running(MARK + "v")
        assert f"0::/{c.prefix}/job_{job_id}/step_batch" in (c.work / f"slurm-{job_id}.out").read_text()
    finally:
        c.stop()
        _scrub_v2(root)


def _scrub_v2(root: Path) -> None:
    if not root.is_dir():
        return
    for path in sorted((p for p in [root, *root.rglob("*")] if p.is_dir()), key=lambda p: -len(p.parts)):
        kill = path / "cgroup.kill"
        if kill.exists():
            try:
                kill.write_text("1")
            except OSError:
                pass
    time.sleep(0.2)
    for path in sorted((p for p in [root, *root.rglob("*")] if p.is_dir()), key=lambda p: -len(p.parts)):
        try:
            path.rmdir()
        except OSError:
            pass


def test_srun_allocation_confined_by_the_credential(confined: Confined) -> None:
    """srun's own allocation: no batch run on the node, the step is the job's first process
    there; its job cgroup gets the CPUs and memory the step credential carries."""
    show = ("import os; print(len(os.sched_getaffinity(0))); "
            "print([l for l in open('/proc/self/cgroup') if ':memory:' in l][0].strip())")
    done = confined.cluster.run("srun", "-c1", "--mem=100M", "python3", "-c", show, cwd=confined.work, timeout=60)
    assert done.returncode == 0, done.stderr
    cpus, memory = done.stdout.split("\n")[:2]
    assert cpus == "1" and memory.endswith("/step_0"), done.stdout
    limit = Path("/sys/fs/cgroup/memory") / memory.split(":", 2)[2].lstrip("/")
    assert not limit.exists()  # (gone with the job)
    hog = confined.cluster.run("srun", "--mem=100M", "python3", "-c", "x = bytearray(400 << 20)",
                               cwd=confined.work, timeout=60)
    assert hog.returncode == 1 and "task 0: Out Of Memory" in hog.stderr, hog.stderr
