"""A real plurmctld and the real commands, with the node daemon played by the test: a DEALER
that registers as n1 and answers launches with the new reports (``job_ended`` with
``oom_kills`` and ``usage``, ``job_frozen``), and a ROUTER on n1's port that takes srun's
``launch_tasks`` while the test plays its plurmstepd (``task_exit`` with the node's OOM kills
and usage, signed with the step's I/O key).

What the commands print is compared with the real Slurm 22.05 (task/cgroup,
jobacct_gather/cgroup) in tests/integration/reference/cgroup/ (helper E's captures): the
usage figures the played node reports are read from the captures themselves (what the real
run measured) and the cluster's first job id is the real run's, so sacct's lines must match
the captures byte for byte, but for what plurm does not measure (pages, fs/disk: left out of
the TRES strings) and the job line's CPU sums (within 2 ms: the real run's sub-millisecond
parts are not printed).
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zmq

from plurmtest import Cluster, command, free_ports, wait_for, write_key
from plurm.wire import authtype, envelope, protocol
from plurm.wire.auth import KeyAuth
from plurm.wire.client import key_path_for

REF = Path(__file__).resolve().parents[1] / "integration" / "reference" / "cgroup"
OOM_FIELDS = "JobID,State,ExitCode,DerivedExitCode,MaxRSS,AveRSS,MaxVMSize,TotalCPU,UserCPU,SystemCPU"
USAGE_FIELDS = ("JobID,MaxRSS,MaxRSSNode,MaxRSSTask,AveRSS,MaxVMSize,AveVMSize,TotalCPU,UserCPU,SystemCPU,"
                "TRESUsageInMax,TRESUsageInAve")
CPU_COLUMNS = ("TotalCPU", "UserCPU", "SystemCPU")


def captured(name: str) -> str:
    path = REF / f"{name}.txt"
    if not path.is_file():
        pytest.skip(f"no capture {name} (helper E's tests/integration/reference/cgroup/)")
    return path.read_text()


def rows_of(text: str) -> list[dict[str, str]]:
    """A sacct -P table as rows."""
    header, *lines = text.splitlines()
    return [dict(zip(header.split("|"), line.split("|"))) for line in lines]


def real_id(name: str) -> int:
    """The real run's job id in a sacct -P capture (its first row's)."""
    return int(rows_of(captured(name))[0]["JobID"])


def _ms(text: str) -> int:
    """sacct's CPU time (``MM:SS.mmm`` or ``HH:MM:SS``) in milliseconds."""
    main, _, sub = text.partition(".")
    parts = [int(p) for p in main.split(":")]
    secs = parts[0] * 60 + parts[1] if sub else parts[0] * 3600 + parts[1] * 60 + parts[2]
    return secs * 1000 + int(sub or 0)


def _kib(text: str) -> float:
    units = {"K": 1, "M": 1024, "G": 1024 ** 2}
    return float(text[:-1]) * units[text[-1]] if text[-1:] in units else float(text) / 1024


def usage_of(row: dict[str, str]) -> dict:
    """The usage a node reports for a step that sacct printed as ``row``: the sizes, and CPU
    seconds inside the printed milliseconds such that TotalCPU comes out as printed too."""
    usage: dict = {}
    for column, key in (("MaxRSS", "max_rss_kb"), ("AveRSS", "ave_rss_kb"), ("MaxVMSize", "max_vmsize_kb")):
        if row.get(column):
            usage[key] = _kib(row[column])
    usage["ave_vmsize_kb"] = _kib(row.get("AveVMSize") or row["MaxVMSize"])
    for column, key in (("MaxRSSTask", "max_rss_task"),):
        if row.get(column):
            usage[key] = int(row[column])
    user, system, total = (_ms(row[c]) for c in CPU_COLUMNS[1:] + CPU_COLUMNS[:1])
    carry = total - user - system  # 0 or 1: the sub-millisecond parts summed past one
    fraction = 0.1 if carry == 0 else 0.6  # (milliseconds)
    usage["user_cpu_s"], usage["system_cpu_s"] = (user + fraction) / 1000, (system + fraction) / 1000
    return usage


def same_but_cpu_sums(got: str, want: str) -> None:
    """Tables equal, but for the job lines' CPU sums: the real run's sum sub-millisecond parts
    we do not have, so within 2 ms there."""
    got_rows, want_rows = rows_of(got), rows_of(want)
    assert [list(r) for r in got_rows] == [list(r) for r in want_rows]
    for g, w in zip(got_rows, want_rows):
        if "." in w["JobID"]:
            assert g == w
        else:
            assert {k: v for k, v in g.items() if k not in CPU_COLUMNS} == \
                {k: v for k, v in w.items() if k not in CPU_COLUMNS}
            for column in CPU_COLUMNS:
                if w[column]:
                    assert abs(_ms(g[column]) - _ms(w[column])) <= 2, (column, g[column], w[column])


def unmeasured_left_out(text: str) -> str:
    """The TRES parts plurm does not measure (pages, fs/disk) out of a capture."""
    return re.sub(r"(fs/disk|pages)=[^,|\n]*,", "", text)


def without_account(table: str) -> str:
    """sacct's default table without its fourth column (Account: 10 wide, after 12+10+10)."""
    return "".join(line[:35] + line[46:] + "\n" for line in table.splitlines())


class PlayedNode:
    """n1's daemon: a DEALER to the controller (its reports) and a ROUTER on n1's port (srun's
    launch_tasks), with the cluster's key."""

    def __init__(self, ctx: zmq.Context, auth: Any, ctld_port: int, node_port: int) -> None:
        self.auth = auth
        self.ctld = ctx.socket(zmq.DEALER)
        self.ctld.setsockopt(zmq.ROUTING_ID, b"node:n1:played")
        self.ctld.setsockopt(zmq.LINGER, 0)
        self.ctld.connect(f"tcp://127.0.0.1:{ctld_port}")
        self.srv = ctx.socket(zmq.ROUTER)
        self.srv.setsockopt(zmq.LINGER, 0)
        self.srv.bind(f"tcp://127.0.0.1:{node_port}")

    def report(self, kind: str, body: dict) -> None:
        self.ctld.send_multipart([b""] + envelope.seal(self.auth, kind, body))

    def register(self) -> None:
        self.report("node_register", {"node": "n1", "cpus": 2, "real_memory": 1000, "boot_time": time.time() - 60,
                                      "slurmd_start_time": time.time()})

    def receive(self, kind: str, timeout: float = 20.0) -> dict:
        """The next controller message of ``kind`` (pings answered by the way)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.ctld.poll(100):
                continue
            frames = self.ctld.recv_multipart()
            header, raw, _ = envelope.open_envelope(self.auth, frames[1:] if frames[0] == b"" else frames)
            if header["type"] == "please_register":
                self.register()
            elif header["type"] == kind:
                return protocol.to_builtins(protocol.decode_body(kind, raw))
        raise AssertionError(f"no {kind} from the controller within {timeout} s")

    def launch_tasks(self, timeout: float = 20.0) -> dict:
        """srun's launch_tasks, answered as plurmd does."""
        assert self.srv.poll(int(timeout * 1000)), "srun sent no launch_tasks"
        ident, *frames = self.srv.recv_multipart()
        header, raw, _ = envelope.open_envelope(self.auth, frames[1:] if frames[0] == b"" else frames)
        assert header["type"] == "launch_tasks"
        self.srv.send_multipart([ident, b""] + envelope.seal(self.auth, "reply", {"ok": True, "pid": 1},
                                                            header.get("id")))
        return protocol.to_builtins(protocol.decode_body("launch_tasks", raw))


@pytest.fixture
def played(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Cluster, PlayedNode, Path]]:
    """The controller and the played node; parametrized (indirectly) with a sacct -P capture,
    the cluster's first job gets the real run's job id, so that fixed-width tables compare."""
    first = real_id(request.param) if hasattr(request, "param") else 1
    ctld_port, node_port = free_ports(2)
    conf = tmp_path / "slurm.conf"
    conf.write_text(f"""ClusterName=played
SlurmctldHost=ctl(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdTimeout=300
FirstJobId={first}
StateSaveLocation={tmp_path}/state
NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port={node_port} CPUs=2 RealMemory=1000
PartitionName=debug Nodes=n1 Default=YES State=UP
""")
    write_key(tmp_path / "slurm.key")
    env = dict(os.environ, SLURM_CONF=str(conf))
    for key in ("SLURM_JOB_ID", "SLURM_JOBID", "PLURM_SLURMCTLD_HOST"):
        env.pop(key, None)
    log = tmp_path / "plurmctld.log"
    with open(log, "wb") as out:
        ctld = subprocess.Popen(command("plurmctld") + ["-D", "-f", str(conf)], env=env, stdout=out, stderr=out)
    ctx = zmq.Context()
    node = PlayedNode(ctx, authtype.load(None, key_path_for(str(conf)), None), ctld_port, node_port)
    cluster = Cluster(tmp_path, conf, env)
    try:
        def registered() -> bool:
            node.register()
            try:
                return any(n.get("responding") for n in cluster.request("node_info", {})["nodes"])
            except Exception:
                return False

        wait_for(registered, timeout=30, what="the played node to register")
        (tmp_path / "work").mkdir()
        yield cluster, node, log
    finally:
        ctld.terminate()
        ctld.wait(timeout=30)
        ctx.destroy(linger=0)


def sacct(cluster: Cluster, *args: str) -> str:
    return cluster.run("sacct", *args, check=True).stdout


@pytest.mark.parametrize("played", ["cg.oom_batch_sacct_P"], indirect=True)
def test_an_oom_killed_batch_job_as_22_05_shows_it(played) -> None:
    cluster, node, _ = played
    want = rows_of(captured("cg.oom_batch_sacct_P"))
    job_id = cluster.sbatch("--mem=100M", "--wrap", "python3 -c 'x = bytearray(400 << 20)'",
                            cwd=cluster.dir / "work")
    assert node.receive("launch_job")["job_id"] == job_id
    node.report("job_ended", {"node": "n1", "job_id": job_id, "exit_code": 0, "exit_signal": 9,
                              "end_time": time.time(), "restarts": 0, "oom_kills": 1, "usage": usage_of(want[1])})
    assert cluster.wait_state(job_id, "OUT_OF_MEMORY")["exit_signal"] == 125
    same_but_cpu_sums(sacct(cluster, "-j", str(job_id), "-o", OOM_FIELDS, "-P"),
                      captured("cg.oom_batch_sacct_P"))
    # The default layout but for the Account column (the real run's association is "anchor").
    assert without_account(sacct(cluster, "-j", str(job_id))) == \
        without_account(captured("cg.oom_batch_sacct_default"))
    show = cluster.run("scontrol", "show", "job", str(job_id), check=True).stdout
    want_show = captured("cg.oom_batch_scontrol")
    for line in ("JobState=OUT_OF_MEMORY Reason=OutOfMemory Dependency=(null)", "ExitCode=0:125"):
        assert line in show and line in want_show
    squeue = cluster.run("squeue", "-t", "all", "-j", str(job_id), "-o", "%i %T %r", check=True).stdout
    assert squeue == captured("cg.oom_batch_squeue_t_all")
    default = cluster.run("squeue", "-t", "all", "-j", str(job_id), check=True).stdout
    assert re.search(r" OO +0:0\d +1 \(OutOfMemory\)$", default.splitlines()[1]), default


@pytest.mark.parametrize("played", ["cg.usage_sacct_P"], indirect=True)
def test_usage_of_a_batch_step_and_an_srun_step_as_sacct_prints_it(played) -> None:
    cluster, node, _ = played
    want = {row["JobID"].partition(".")[2]: row for row in rows_of(captured("cg.usage_sacct_P"))}
    job_id = cluster.sbatch("--mem=400M", "--wrap", "true", cwd=cluster.dir / "work")
    node.receive("launch_job")
    # The step as srun reports it (the controller's side of step_complete, through the wire).
    step = cluster.request("step_create", {"job_id": job_id, "name": "python3", "ntasks": 1})
    cluster.request("step_complete", {"job_id": job_id, "step_id": step["step_id"], "usage": usage_of(want["0"])})
    node.report("job_ended", {"node": "n1", "job_id": job_id, "end_time": time.time(), "restarts": 0,
                              "usage": usage_of(want["batch"])})
    cluster.wait_state(job_id, "COMPLETED")
    same_but_cpu_sums(sacct(cluster, "-j", str(job_id), "-o", USAGE_FIELDS, "-P"),
                      unmeasured_left_out(captured("cg.usage_sacct_P")))
    # Without -P: the widths, and the TRES strings cut where sacct cuts them (the step lines).
    wide = sacct(cluster, "-j", str(job_id), "-o", USAGE_FIELDS).splitlines()
    want_wide = captured("cg.usage_sacct_wide").splitlines()
    assert wide[:2] == want_wide[:2] and wide[3:] == want_wide[3:]
    assert sacct(cluster, "-j", str(job_id), "--units=M", "-o", "JobID,MaxRSS,AveRSS,MaxVMSize", "-P") == \
        captured("cg.usage_sacct_units_M")


@pytest.mark.parametrize("played", ["cg.oom_step_sacct_P"], indirect=True)
def test_an_oom_killed_srun_step_in_a_batch_job_leaves_the_job_completed(played) -> None:
    cluster, node, _ = played
    want = {row["JobID"].partition(".")[2]: row for row in rows_of(captured("cg.oom_step_sacct_P"))}
    job_id = cluster.sbatch("--mem=100M", "--wrap", "true", cwd=cluster.dir / "work")
    node.receive("launch_job")
    step = cluster.request("step_create", {"job_id": job_id, "name": "bash", "ntasks": 1})
    cluster.request("step_complete", {"job_id": job_id, "step_id": step["step_id"], "exit_signal": 9,
                                      "oom_kills": 1, "usage": usage_of(want["0"])})
    node.report("job_ended", {"node": "n1", "job_id": job_id, "end_time": time.time(), "restarts": 0,
                              "usage": usage_of(want["batch"])})
    job = cluster.wait_state(job_id, "COMPLETED")
    assert (job.get("derived_exit_code", 0), job.get("derived_exit_signal")) == (0, 125)
    same_but_cpu_sums(sacct(cluster, "-j", str(job_id), "-o", OOM_FIELDS, "-P"),
                      captured("cg.oom_step_sacct_P"))
    assert without_account(sacct(cluster, "-j", str(job_id))) == \
        without_account(captured("cg.oom_step_sacct_default"))


@pytest.mark.parametrize("played", ["cg.oom_srun_sacct_P"], indirect=True)
def test_srun_of_an_oom_killed_task_says_so_and_its_job_is_out_of_memory(played) -> None:
    cluster, node, _ = played
    usage = usage_of(rows_of(captured("cg.oom_srun_sacct_P"))[1])
    srun = subprocess.Popen(command("srun") + ["-w", "n1", "--mem=100M", "bash", "-c", "python3 -c x"],
                            env=cluster.env, cwd=cluster.dir / "work", stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        launch = node.launch_tasks()
        # plurmstepd's side: hello, the task's end (the kernel's SIGKILL) with the node's figures.
        ctx = zmq.Context.instance()
        stepd = ctx.socket(zmq.DEALER)
        stepd.setsockopt(zmq.LINGER, 1000)
        stepd.connect(f"tcp://{launch['io_host']}:{launch['io_port']}")
        key = KeyAuth(launch["io_key"].encode())
        for kind, body in (("stepd_hello", {"node_id": 0}),
                           ("task_exit", {"task": 0, "exit_code": 0, "signal": 9, "oom_kills": 1,
                                          "usage": usage}),
                           ("node_done", {"node": "n1"})):
            stepd.send_multipart([b""] + envelope.seal(key, kind, body))
        out, err = srun.communicate(timeout=60)
        stepd.close()
    finally:
        if srun.poll() is None:
            srun.kill()
            srun.wait()
    job_id = launch["job_id"]
    assert srun.returncode == 1  # as 22.05's (cg.oom_srun: exit 1)
    assert out == captured("cg.oom_srun")
    assert err == captured("cg.oom_srun.stderr")
    job = cluster.wait_state(job_id, "OUT_OF_MEMORY")
    assert (job.get("exit_code", 0), job.get("exit_signal")) == (0, 125)
    same_but_cpu_sums(sacct(cluster, "-j", str(job_id), "-o", OOM_FIELDS, "-P"),
                      captured("cg.oom_srun_sacct_P"))


def test_a_frozen_job_shows_its_cause_and_resumes_or_is_cancelled(played) -> None:
    cluster, node, log = played
    job_id = cluster.sbatch("--wrap", "sleep 600", cwd=cluster.dir / "work")
    node.receive("launch_job")
    node.report("job_frozen", {"node": "n1", "job_id": job_id, "restarts": 0, "cause": "memory 95% of 100M for 30s"})
    wait_for(lambda: cluster.job(job_id).get("state") == "SUSPENDED", what="the job to be suspended")
    reason = "Frozen(memory 95% of 100M for 30s)"
    assert cluster.run("squeue", "-j", str(job_id), "-o", "%T|%r", check=True).stdout == f"STATE|REASON\nSUSPENDED|{reason}\n"
    row = cluster.run("squeue", "-j", str(job_id), check=True).stdout.splitlines()[1]
    assert " S " in row and row.endswith(f"      1 ({reason})")  # NODELIST(REASON): why, not the node
    assert f"JobState=SUSPENDED Reason={reason} " in cluster.run("scontrol", "show", "job", str(job_id)).stdout
    assert f"job {job_id} frozen by node n1's freeze policy: memory 95% of 100M for 30s" in log.read_text()
    # scontrol resume: the usual resume, to the node (which thaws it).
    cluster.run("scontrol", "resume", str(job_id), check=True)
    signalled = node.receive("signal_job")
    assert (signalled["job_id"], signalled["signal"], signalled["scope"]) == (job_id, 18, "all")
    assert cluster.job(job_id)["state"] == "RUNNING" and cluster.job(job_id).get("reason", "None") == "None"
    # Frozen again, then scancel: the node is told to end it, as any suspended job.
    node.report("job_frozen", {"node": "n1", "job_id": job_id, "restarts": 0, "cause": "opened /dev/nvidia1"})
    wait_for(lambda: cluster.job(job_id).get("state") == "SUSPENDED", what="the job to be frozen again")
    cluster.run("scancel", str(job_id), check=True)
    assert node.receive("terminate_job")["job_id"] == job_id
    node.report("job_ended", {"node": "n1", "job_id": job_id, "exit_signal": 9, "end_time": time.time(),
                              "restarts": 0})
    assert cluster.wait_state(job_id, "CANCELLED")["reason"] == "Frozen(opened /dev/nvidia1)"


def test_job_frozen_for_a_job_the_node_does_not_run_is_refused_with_a_log_line(played) -> None:
    cluster, node, log = played
    node.report("job_frozen", {"node": "n1", "job_id": 4242, "restarts": 0, "cause": "memory"})
    wait_for(lambda: "job_frozen from node n1 refused: job 4242" in log.read_text(), what="the refusal's log line")
    from plurm.wire.client import ClientError

    with pytest.raises(ClientError, match="Invalid job id specified"):  # nothing made of it
        cluster.job(4242)
