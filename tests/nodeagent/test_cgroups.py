"""plurm.nodeagent.cgroups against the kernel: real cgroups (v1, and v2 on the unified mount
with what the kernel offers there), real processes, real device nodes.

Each test gets its own prefix (``plurmtest_<pid>_<n>``) and a finalizer that kills and
removes whatever it left, even when the test fails.  A test that needs a controller runs on
the versions whose kernel offers it here (on the CI VM, v2 has neither memory nor cpuset:
those run on v1 only; devices on v2 are an eBPF program, which works there).
"""

from __future__ import annotations

import errno
import itertools
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from plurm.nodeagent import cgroups
from plurm.nodeagent.cgroups import mounts

ROOT = os.geteuid() == 0
V2_MOUNT = next((m.path for m in mounts.cgroup_mounts() if m.fstype == "cgroup2"), None)
V1_CONTROLLERS = set(mounts.v1_controllers(mounts.cgroup_mounts(), "/sys/fs/cgroup"))
V1_FREEZER = "freezer" in V1_CONTROLLERS
V2_CONTROLLERS = set(Path(V2_MOUNT, "cgroup.controllers").read_text().split()) if V2_MOUNT else set()
_counter = itertools.count()
MIB = 1 << 20


def _conf(version: int) -> cgroups.CgroupConf:
    if version == 1:
        return cgroups.CgroupConf(plugin="cgroup/v1", constrain_cores=True, constrain_ram=True,
                                  constrain_devices=True)
    assert V2_MOUNT
    return cgroups.CgroupConf(plugin="cgroup/v2", mountpoint=V2_MOUNT, constrain_cores=True,
                              constrain_ram=True, constrain_devices=True)


def _with(controller: str) -> list:
    """The versions to run a test on: those whose kernel offers ``controller`` here (devices
    on v2 is an eBPF program, not a controller: always)."""
    out = []
    if controller in V1_CONTROLLERS:
        out.append(pytest.param(1, id="v1"))
    if controller in V2_CONTROLLERS or controller == "devices":
        out.append(pytest.param(2, id="v2"))
    return out


def _leftovers(prefix: str) -> list[str]:
    found = []
    for mount in mounts.cgroup_mounts():
        path = os.path.join(mount.path, prefix)
        if os.path.isdir(path):
            found.extend(root for root, _, _ in os.walk(path))
    return found


@pytest.fixture(params=[1, 2], ids=["v1", "v2"])
def hierarchy(request: pytest.FixtureRequest):
    if not ROOT:
        pytest.skip("cgroups need root (plurm runs jobs unconfined without it)")
    if request.param == 1 and not V1_FREEZER:
        pytest.skip("no cgroup v1 freezer mounted under /sys/fs/cgroup")
    if request.param == 2 and V2_MOUNT is None:
        pytest.skip("no cgroup2 file system mounted")
    prefix = f"plurmtest_{os.getpid()}_{next(_counter)}"
    h = cgroups.open_hierarchy(_conf(request.param), prefix)
    yield h
    for uid, job_id in h.jobs():
        job = h.job(uid, job_id)
        job.thaw() if job.frozen() else None
        job.kill_all(timeout=10)
        job.remove()
    h.remove()
    # Whatever the code under test failed to remove: deepest first, then say so.
    left = _leftovers(prefix)
    for path in reversed(left):
        try:
            os.rmdir(path)
        except OSError:
            pass
    assert not left, f"cgroups left behind: {left}"


def _spawn(step: cgroups.StepCgroup, code: str, **kw) -> subprocess.Popen:
    paths = step.join_paths()
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)],
                            preexec_fn=lambda: cgroups.join(paths), **kw)


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def _wait(predicate, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


# ============================================================== conf

def test_no_cgroup_conf_means_slurms_defaults(tmp_path: Path) -> None:
    (tmp_path / "slurm.conf").write_text("ClusterName=c\n")
    conf = cgroups.read_conf(str(tmp_path / "slurm.conf"))
    assert conf == cgroups.CgroupConf()
    assert (conf.plugin, conf.mountpoint, conf.allowed_ram_percent, conf.allowed_swap_percent,
            conf.min_ram_mb) == ("autodetect", "/sys/fs/cgroup", 100.0, 0.0, 30)
    assert not (conf.constrain_cores or conf.constrain_ram or conf.constrain_swap
                or conf.constrain_devices)


def test_cgroup_conf_keys_are_case_insensitive_with_comments(tmp_path: Path) -> None:
    (tmp_path / "cgroup.conf").write_text(textwrap.dedent("""\
        ###
        # Slurm cgroup support configuration file.
        ###
        CgroupPlugin=cgroup/v1
        cgroupmountpoint=/sys/fs/cgroup   # the default
        ConstrainCores=yes
        CONSTRAINRAMSPACE=yes AllowedRAMSpace=101.5
        ConstrainSwapSpace=YES
        AllowedSwapSpace=50.5
        ConstrainDevices=yes
        ConstrainKmemSpace=no    #avoid known Kernel issues
        MinRAMSpace=64
        CgroupAutomount=yes
        """))
    conf = cgroups.read_conf(str(tmp_path / "slurm.conf"))
    assert conf.plugin == "cgroup/v1" and conf.constrain_cores and conf.constrain_ram
    assert conf.allowed_ram_percent == 101.5 and conf.allowed_swap_percent == 50.5
    assert conf.constrain_swap and conf.constrain_devices and conf.min_ram_mb == 64
    assert conf.path == str(tmp_path / "cgroup.conf")


@pytest.mark.parametrize("line, message", [
    ("TaskAffinity=yes", "Parsing error at unrecognized key: TaskAffinity"),
    ("ConstrainCores=maybe", "invalid value 'maybe' for ConstrainCores"),
    ("AllowedRAMSpace=lots", "invalid value 'lots' for AllowedRAMSpace"),
    ("CgroupPlugin=cgroup/v3", "invalid value 'cgroup/v3' for CgroupPlugin"),
    ("MemorySwappiness=101", "invalid value '101' for MemorySwappiness"),
])
def test_a_bad_cgroup_conf_line_is_a_typed_error_naming_file_and_line(
        tmp_path: Path, line: str, message: str) -> None:
    (tmp_path / "cgroup.conf").write_text(f"ConstrainCores=yes\n# comment\n{line}\n")
    with pytest.raises(cgroups.ConfError) as info:
        cgroups.read_conf(str(tmp_path / "slurm.conf"))
    assert str(info.value).startswith(f"{tmp_path / 'cgroup.conf'}:3: ")
    assert message in str(info.value)
    assert isinstance(info.value, cgroups.CgroupError)


def test_keys_22_05_ignores_are_accepted_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    conf = cgroups.parse_conf("CgroupReleaseAgentDir=/etc/slurm/cgroup\nConstrainCores=yes\n")
    assert conf.constrain_cores
    assert "CgroupReleaseAgentDir option has been removed" in caplog.text


def test_memory_limits_follow_allowed_ram_and_swap_percent() -> None:
    alloc = 1000 * MIB
    conf = cgroups.CgroupConf(constrain_ram=True, allowed_ram_percent=120)
    assert conf.memory_limits(alloc) == (1200 * MIB, alloc, None)
    conf = cgroups.CgroupConf(constrain_ram=True, allowed_ram_percent=50)
    assert conf.memory_limits(alloc) == (500 * MIB, 500 * MIB, None)  # soft = hard below 100%
    conf = cgroups.CgroupConf(constrain_ram=True, constrain_swap=True, allowed_swap_percent=10)
    assert conf.memory_limits(alloc) == (alloc, alloc, 100 * MIB)
    # Swap without RAM: RAM gets the RAM+swap limit (man cgroup.conf, ConstrainSwapSpace).
    conf = cgroups.CgroupConf(constrain_swap=True, allowed_swap_percent=10)
    assert conf.memory_limits(alloc) == (1100 * MIB, alloc, 0)
    conf = cgroups.CgroupConf(constrain_ram=True)
    assert conf.memory_limits(1 * MIB) == (30 * MIB, 30 * MIB, None)  # MinRAMSpace floor, soft too
    assert conf.memory_limits(0, total_bytes=4000 * MIB) == (4000 * MIB, 4000 * MIB, None)
    assert cgroups.CgroupConf().memory_limits(alloc) == (None, None, None)
    limits = cgroups.CgroupConf(constrain_cores=True).limits(cpus=[1], alloc_ram_bytes=alloc,
                                                             denied_devices=[("c", 1, 5)])
    assert limits.cpus == [1] and limits.ram_bytes is None and limits.denied_devices == []


REFERENCE = Path(__file__).parent.parent / "integration" / "reference" / "cgroup"


@pytest.mark.parametrize("variant", ["ramonly_noswap", "allowed150_swap50", "swaponly"])
@pytest.mark.parametrize("mem_mb", [10, 100])
def test_memory_limits_are_those_22_05_wrote(variant: str, mem_mb: int) -> None:
    # The real slurmd's values for `--mem=<mem_mb>M` under each cgroup.conf (regenerate.sh).
    conf = cgroups.parse_conf((REFERENCE / f"variants.{variant}_cgroup_conf.txt").read_text())
    text = (REFERENCE / f"variants.{variant}_mem{mem_mb}M.txt").read_text()
    block = next(part for part in text.split("== ")
                 if "/memory/" in part and part.split("\n", 1)[0].endswith("/step_batch"))
    written = dict(line.split(": ", 1) for line in block.splitlines()[1:] if ": " in line)
    unlimited = 9223372036854771712
    hard, soft, swap = conf.memory_limits(mem_mb * MIB)
    assert (int(written["memory.limit_in_bytes"]), int(written["memory.soft_limit_in_bytes"]),
            int(written["memory.memsw.limit_in_bytes"])) == (hard, soft, unlimited if swap is None else hard + swap)


def test_cpulist_round_trips() -> None:
    assert cgroups.cpulist([5, 0, 1, 2, 7, 8]) == "0-2,5,7-8"
    assert cgroups.parse_cpulist("0-2,5,7-8\n") == [0, 1, 2, 5, 7, 8]
    assert cgroups.parse_cpulist("") == []


def test_without_root_there_is_no_hierarchy() -> None:
    # A forked child drops its effective uid (modules are loaded already) and reports back.
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            if ROOT:
                os.seteuid(65534)
            cgroups.open_hierarchy(cgroups.CgroupConf(), "slurm")
            os.write(write_end, b"opened")
        except cgroups.Unavailable as exc:
            os.write(write_end, str(exc).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as f:
        said = f.read()
    os.waitpid(pid, 0)
    assert said == "not running as root: cgroups need root"


def test_autodetect_reads_the_mount_table(tmp_path: Path) -> None:
    if not ROOT:
        pytest.skip("open_hierarchy refuses before reading mounts without root")
    table = tmp_path / "mounts"
    table.write_text("tmpfs /sys/fs/cgroup tmpfs rw 0 0\n")
    with pytest.raises(cgroups.Unavailable, match="no cgroup hierarchy mounted at /sys/fs/cgroup"):
        cgroups.open_hierarchy(cgroups.CgroupConf(), "slurm", mounts_file=str(table))
    table.write_text("cgroup2 /sys/fs/cgroup cgroup2 rw,nsdelegate 0 0\n")
    with pytest.raises(cgroups.Unavailable, match="is not a cgroup2 mount"):
        cgroups.open_hierarchy(cgroups.CgroupConf(plugin="cgroup/v2", mountpoint="/x"), "slurm",
                               mounts_file=str(table))
    table.write_text("cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n")
    with pytest.raises(cgroups.Unavailable, match="no freezer"):
        cgroups.open_hierarchy(cgroups.CgroupConf(), "slurm", mounts_file=str(table))


# ============================================================== the kernel

def test_a_step_task_joins_in_preexec_and_is_tracked(hierarchy: cgroups.Hierarchy) -> None:
    job = hierarchy.job(4242, 17)
    assert not job.exists()
    job.create(cgroups.Limits())
    step = job.step("batch")
    step.create(cgroups.Limits())
    assert hierarchy.jobs() == [(4242, 17)] and job.steps() == ["batch"]
    child = _spawn(step, "import sys; print('up', flush=True); sys.stdin.read()",
                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "up\n"
        assert step.pids() == {child.pid} and job.pids() == {child.pid}
    finally:
        child.communicate("")
    assert _wait(lambda: not job.pids())
    assert job.remove() and not job.exists()


@pytest.mark.parametrize("hierarchy", _with("cpuset"), indirect=True)
def test_a_one_cpu_job_sees_one_cpu(hierarchy: cgroups.Hierarchy) -> None:
    cpu = max(os.sched_getaffinity(0))
    job = hierarchy.job(0, 16)
    job.create(cgroups.Limits(cpus=[cpu]))
    step = job.step("0")
    step.create(cgroups.Limits())
    child = _spawn(step, "import os; print(sorted(os.sched_getaffinity(0)))",
                   stdout=subprocess.PIPE, text=True)
    assert child.communicate(timeout=60)[0].strip() == str([cpu])
    assert job.remove()


def test_a_limit_without_its_controller_is_left_off_with_one_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    # The kernel here binds controllers to v1 that v2 then lacks; a v2 hierarchy still tracks,
    # kills and freezes, and says once what it cannot constrain.
    if not ROOT:
        pytest.skip("cgroups need root")
    lacking = [c for c in ("memory", "cpuset") if c not in V2_CONTROLLERS]
    if V2_MOUNT is None or not lacking:
        pytest.skip("every controller is offered on v2 here")
    prefix = f"plurmtest_{os.getpid()}_{next(_counter)}"
    h = cgroups.open_hierarchy(_conf(2), prefix)
    try:
        assert set(lacking) <= set(h.missing)
        assert caplog.text.count(f"no {lacking[0]} controller") == 1
        job = h.job(0, 15)
        job.create(cgroups.Limits(cpus=[0], ram_bytes=50 * MIB))
        job.create(cgroups.Limits(cpus=[0], ram_bytes=50 * MIB))
        assert caplog.text.count(f"no {lacking[0]} controller") == 1
        assert job.exists() and job.remove()
    finally:
        h.remove()
    assert _leftovers(prefix) == []


def test_a_task_started_as_its_owner_inherits_its_parents_step(hierarchy: cgroups.Hierarchy) -> None:
    """What plurmstepd does: join() cannot run after subprocess's switch to user= (the user may
    not write root's cgroup.procs), so the root parent moves itself into the step and the
    task it starts as its owner inherits the cgroup."""
    job = hierarchy.job(65534, 29)
    job.create(cgroups.Limits())
    step = job.step("0")
    step.create(cgroups.Limits())
    parent_code = textwrap.dedent(f"""\
        import os, subprocess, sys
        from plurm.nodeagent import cgroups
        h = cgroups.open_hierarchy(cgroups.CgroupConf(plugin={_conf(hierarchy.version).plugin!r},
                                   mountpoint={_conf(hierarchy.version).mountpoint!r}), {hierarchy.prefix!r})
        h.job(65534, 29).step("0").attach(os.getpid())
        out = subprocess.run(["cat", "/proc/self/cgroup"], user=65534, group=65534,
                             capture_output=True, text=True, check=True).stdout
        print(out)
        """)
    parent = subprocess.run([sys.executable, "-c", parent_code], capture_output=True, text=True,
                            timeout=60)
    assert parent.returncode == 0, parent.stderr
    where = f"{hierarchy.prefix}/uid_65534/job_29/step_0" if hierarchy.version == 1 else \
        f"{hierarchy.prefix}/job_29/step_0"
    assert where in parent.stdout
    assert _wait(lambda: not job.pids()) and job.remove()


def test_attach_moves_a_running_process(hierarchy: cgroups.Hierarchy) -> None:
    job = hierarchy.job(0, 18)
    job.create(cgroups.Limits())
    step = job.step("extern")
    step.create(cgroups.Limits())
    child = subprocess.Popen(["sleep", "60"])
    try:
        step.attach(child.pid)
        assert job.pids() == {child.pid}
    finally:
        child.kill()
        child.wait()
    with pytest.raises(cgroups.CgroupError):
        step.attach(child.pid)  # gone: a typed error, not an OSError


@pytest.mark.parametrize("hierarchy", _with("memory"), indirect=True)
def test_a_memory_hog_is_oom_killed_and_counted(hierarchy: cgroups.Hierarchy) -> None:
    job = hierarchy.job(0, 19)
    job.create(cgroups.Limits(ram_bytes=50 * MIB, swap_bytes=0))
    step = job.step("batch")
    step.create(cgroups.Limits(ram_bytes=50 * MIB, swap_bytes=0))
    hog = _spawn(step, "b = bytearray(200 * 1024 * 1024)\nfor i in range(0, len(b), 4096): b[i] = 1")
    assert hog.wait(timeout=120) == -signal.SIGKILL
    assert step.oom_kills() == 1 and job.oom_kills() == 1
    # The step goes on: a small process still runs there.
    ok = _spawn(step, "b = bytearray(10 * 1024 * 1024)")
    assert ok.wait(timeout=60) == 0
    assert job.remove()


def test_usage_reports_peak_memory_and_cpu_time(hierarchy: cgroups.Hierarchy) -> None:
    job = hierarchy.job(0, 20)
    job.create(cgroups.Limits())
    step = job.step("0")
    step.create(cgroups.Limits())
    child = _spawn(step, """\
        import time
        b = bytearray(100 * 1024 * 1024)
        for i in range(0, len(b), 4096): b[i] = 1
        end = time.process_time() + 0.3
        while time.process_time() < end: pass
        """)
    assert child.wait(timeout=120) == 0
    usage = step.usage()
    assert set(usage) == set(cgroups.USAGE_KEYS)
    assert usage["cpu_total_ns"] > 0 and usage["cpu_user_ns"] > 0
    assert usage["cpu_user_ns"] + usage["cpu_system_ns"] <= usage["cpu_total_ns"] * 1.1 + 10_000_000
    assert job.usage()["cpu_total_ns"] >= usage["cpu_total_ns"]
    if "memory" not in hierarchy.missing:  # v2 without a memory controller: CPU time only
        assert usage["max_rss_bytes"] >= 100 * MIB
        assert job.usage()["max_rss_bytes"] >= 100 * MIB


@pytest.mark.parametrize("hierarchy", _with("devices"), indirect=True)
def test_a_denied_device_fails_to_open_and_an_allowed_one_opens(
        hierarchy: cgroups.Hierarchy, tmp_path: Path) -> None:
    allowed, denied = tmp_path / "fake_null", tmp_path / "fake_zero"
    os.mknod(allowed, 0o666 | 0o020000, os.makedev(1, 3))  # char 1:3, what /dev/null is
    os.mknod(denied, 0o666 | 0o020000, os.makedev(1, 5))  # char 1:5, what /dev/zero is
    job = hierarchy.job(0, 21)
    job.create(cgroups.Limits(denied_devices=[("c", 1, 5)]))
    step = job.step("0")
    step.create(cgroups.Limits(denied_devices=[("c", 1, 5)]))
    child = _spawn(step, f"""\
        import errno, os
        os.close(os.open({str(allowed)!r}, os.O_RDWR))
        try:
            os.open({str(denied)!r}, os.O_RDONLY)
        except PermissionError as e:
            raise SystemExit(e.errno)
        raise SystemExit(0)
        """)
    assert child.wait(timeout=60) == errno.EPERM
    os.close(os.open(denied, os.O_RDONLY))  # outside the job the same node opens


def test_freeze_stops_a_counting_process_and_thaw_continues_it(
        hierarchy: cgroups.Hierarchy, tmp_path: Path) -> None:
    counter = tmp_path / "counter"
    job = hierarchy.job(0, 22)
    job.create(cgroups.Limits())
    step = job.step("batch")
    step.create(cgroups.Limits())
    child = _spawn(step, f"""\
        import os, time
        n = 0
        while True:
            n += 1
            with open({str(counter)!r} + ".tmp", "w") as f: f.write(str(n))
            os.replace({str(counter)!r} + ".tmp", {str(counter)!r})
            time.sleep(0.005)
        """)
    try:
        read = lambda: int(counter.read_text() or 0) if counter.exists() else 0  # noqa: E731
        assert _wait(lambda: read() > 3)
        job.freeze()
        assert job.frozen()
        frozen_at = read()
        time.sleep(0.3)  # a running counter moves ~50 times in this
        assert read() == frozen_at
        job.thaw()
        assert not job.frozen()
        assert _wait(lambda: read() > frozen_at + 3)
    finally:
        assert job.kill_all()
        child.wait(timeout=30)


def test_kill_all_kills_a_daemonized_child_and_a_fork_chain(
        hierarchy: cgroups.Hierarchy, tmp_path: Path) -> None:
    pidfile = tmp_path / "daemon.pid"
    job = hierarchy.job(0, 23)
    job.create(cgroups.Limits())
    batch = job.step("batch")
    batch.create(cgroups.Limits())
    # Double fork + setsid: the daemon leaves the job's session and process group.
    starter = _spawn(batch, f"""\
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                open({str(pidfile)!r} + ".tmp", "w").write(str(os.getpid()))
                os.replace({str(pidfile)!r} + ".tmp", {str(pidfile)!r})
                time.sleep(1000)
            os._exit(0)
        """)
    assert starter.wait(timeout=60) == 0
    assert _wait(pidfile.exists)
    daemon = int(pidfile.read_text())
    # A fork chain: each process forks and exits, so its pid changes all the time (bounded, in
    # case the kill under test fails: it stops by itself after 60 s).
    step = job.step("0")
    step.create(cgroups.Limits())
    chain = _spawn(step, """\
        import os, time
        end = time.time() + 60
        while time.time() < end:
            if os.fork():
                os._exit(0)
        """)
    chain.wait(timeout=60)
    assert daemon in job.pids() and step.pids()  # the chain goes on without its first process
    assert job.kill_all(timeout=10)
    assert job.pids() == set()
    assert _wait(lambda: _gone(daemon))
    assert job.remove()
    assert hierarchy.jobs() == []


def test_remove_is_false_while_busy_and_leaves_nothing_after(hierarchy: cgroups.Hierarchy) -> None:
    job = hierarchy.job(1234, 24)
    job.create(cgroups.Limits())
    job.create(cgroups.Limits())  # idempotent
    step = job.step("1")
    step.create(cgroups.Limits())
    child = _spawn(step, "import time; time.sleep(60)")
    try:
        assert job.remove() is False and job.exists()
    finally:
        child.kill()
        child.wait()
    assert _wait(lambda: not job.pids())
    assert job.remove() and not job.exists()
    assert job.remove()  # already gone: still True
    assert hierarchy.remove()
    assert _leftovers(hierarchy.prefix) == []


def test_jobs_of_one_user_made_and_removed_at_once(hierarchy: cgroups.Hierarchy) -> None:
    # remove() takes v1's uid_<uid> level away when it is empty: a job of the same user being
    # made at that moment must still be made (its chain is made again).
    import threading

    errors: list[BaseException] = []

    def churn(job_id: int) -> None:
        try:
            for _ in range(150):
                job = hierarchy.job(777, job_id)
                job.create(cgroups.Limits())
                job.step("batch").create(cgroups.Limits())
                assert job.remove()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=churn, args=(n,)) for n in (31, 32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert hierarchy.jobs() == []


def test_step_kill_all_leaves_the_other_steps(hierarchy: cgroups.Hierarchy) -> None:
    job = hierarchy.job(0, 25)
    job.create(cgroups.Limits())
    batch, step = job.step("batch"), job.step("0")
    batch.create(cgroups.Limits())
    step.create(cgroups.Limits())
    keep = _spawn(batch, "import time; time.sleep(60)")
    kill = _spawn(step, "import time; time.sleep(60)")
    try:
        assert step.kill_all()
        assert kill.wait(timeout=30) == -signal.SIGKILL
        assert keep.poll() is None and batch.pids() == {keep.pid}
        assert step.remove() and job.steps() == ["batch"]
    finally:
        job.kill_all()
        keep.wait(timeout=30)


def test_kill_all_kills_a_suspended_job(hierarchy: cgroups.Hierarchy) -> None:
    # scancel of a job that scontrol suspend froze: the kill must not wait on the freezer.
    job = hierarchy.job(0, 27)
    job.create(cgroups.Limits())
    step = job.step("batch")
    step.create(cgroups.Limits())
    child = _spawn(step, "import time; time.sleep(60)")
    job.freeze()
    assert job.frozen()
    assert job.kill_all()
    assert child.wait(timeout=30) == -signal.SIGKILL
    assert not job.frozen() and job.remove()


@pytest.mark.parametrize("hierarchy", [pytest.param(1, id="v1")], indirect=True)
def test_v1_files_hold_what_slurm_writes(hierarchy: cgroups.Hierarchy) -> None:
    """The values Slurm 22.05 wrote for a 1-CPU --mem=100M job with ConstrainCores,
    ConstrainRAMSpace, ConstrainSwapSpace (AllowedSwapSpace=0) on this VM
    (tests/integration/reference/cgroup/cg.layout_values_c1_mem100M_gpu1.txt)."""
    conf = cgroups.CgroupConf(constrain_cores=True, constrain_ram=True, constrain_swap=True)
    limits = conf.limits(cpus=[0], alloc_ram_bytes=100 * MIB)
    job = hierarchy.job(0, 28)
    job.create(limits)
    step = job.step("batch")
    step.create(limits)
    v1 = {c: os.path.dirname(root) for c, root in hierarchy.roots.items()}  # type: ignore[attr-defined]
    for level in ("uid_0/job_28", "uid_0/job_28/step_batch"):
        memory = Path(v1["memory"], hierarchy.prefix, level)
        for name in ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes",
                     "memory.soft_limit_in_bytes"):
            assert (memory / name).read_text().strip() == "104857600", (level, name)
        assert (memory / "memory.use_hierarchy").read_text().strip() == "1"
        cpuset = Path(v1["cpuset"], hierarchy.prefix, level)
        assert (cpuset / "cpuset.cpus").read_text().strip() == "0"
        assert (cpuset / "cpuset.mems").read_text().strip() == "0"
        assert Path(v1["freezer"], hierarchy.prefix, level, "freezer.state").read_text().strip() == "THAWED"
    assert job.remove()
    # As Slurm leaves it after the job: the prefix level stays, the user's level goes.
    for controller in ("memory", "cpuset", "freezer"):
        prefix = Path(v1[controller], hierarchy.prefix)
        assert prefix.is_dir() and not [d for d in prefix.iterdir() if d.is_dir()]


@pytest.mark.bench
def test_bench_create_attach_kill_remove(hierarchy: cgroups.Hierarchy) -> None:
    """The cost of a job's cgroup life (create job + step, attach a process, kill_all, remove),
    without the process's own start: 100 jobs, the mean printed."""
    rounds = 100
    children = [subprocess.Popen(["sleep", "60"]) for _ in range(rounds)]
    spent = 0.0
    try:
        for n, child in enumerate(children):
            start = time.perf_counter()
            job = hierarchy.job(0, 1000 + n)
            job.create(cgroups.Limits(cpus=[0], ram_bytes=100 * MIB))
            step = job.step("batch")
            step.create(cgroups.Limits())
            step.attach(child.pid)
            assert job.kill_all()
            assert job.remove()
            spent += time.perf_counter() - start
            child.wait()
    finally:
        for child in children:
            child.kill()
            child.wait()
    print(f"\ncgroup v{hierarchy.version}: create+attach+kill_all+remove "
          f"{spent / rounds * 1000:.2f} ms per job (mean of {rounds})")
