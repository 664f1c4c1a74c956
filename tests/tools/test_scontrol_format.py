"""scontrol's layouts against what Slurm 22.05 printed (../shared/reference/slurm-22.05).

Each test builds the job/node/partition dicts the controller would send for the situation
the reference captured (fields at their model default omitted, as on the wire) and compares
the text byte for byte.  Times are built in local time, so the test holds in any time zone.
"""

from __future__ import annotations

import io
import os
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from plurm.tools import scontrol, showconfig, showfmt
from scontroltest import FakeScontrol, run

REF = Path(__file__).resolve().parents[3] / "shared" / "reference" / "slurm-22.05"
if not REF.is_dir():
    REF = Path("/work/shared/reference/slurm-22.05")

pytestmark = pytest.mark.skipif(not REF.is_dir(), reason="Slurm reference outputs not available")


def ref(name: str) -> str:
    # plurm has no session ids: AllocNode:Sid shows the submit host and 0.
    return (REF / name).read_text().replace("AllocNode:Sid=localhost:2369", "AllocNode:Sid=localhost:0")


def t(hms: str, day: int = 29, month: int = 11, year: int = 2026) -> float:
    h, m, s = (int(x) for x in hms.split(":"))
    return time.mktime((year, month, day, h, m, s, 0, 0, -1))


SUBMIT = t("15:44:40")
START = t("15:45:03")
NOW = START + 13
YEAR = 365 * 24 * 60
BUSY = "/tmp/slurm-anchor/capture/busy"


def spec(**kw) -> dict:
    base = {"command": f"{BUSY}/sleep.sh", "work_dir": BUSY, "stdout": "/dev/null", "stderr": "/dev/null"}
    base.update(kw)
    return base


def running(job_id: int, name: str, nodes: list[str], cpus: list[int], mem: list[int], **kw) -> dict:
    job = {"job_id": job_id, "spec": spec(name=name, **kw.pop("spec", {})), "state": "RUNNING",
           "priority": kw.pop("priority", 1078), "partition": "debug", "submit_time": SUBMIT,
           "eligible_time": SUBMIT, "start_time": START, "nodes": nodes, "cpus": cpus, "mem": mem,
           "tasks": cpus, "last_sched_eval": START,
           # The captures come from a Slurm without accounting (jobcomp), whose controller gives
           # a job without a limit a year-long one; plurm keeps None (UNLIMITED, as Slurm with
           # slurmdbd: tests/tools/test_point10_limits.py).
           "time_limit": YEAR}
    job.update(kw)
    return job


def pending(job_id: int, name: str, reason: str, **kw) -> dict:
    job = {"job_id": job_id, "spec": spec(name=name, **kw.pop("spec", {})), "priority": kw.pop("priority", 1078),
           "partition": "debug", "submit_time": SUBMIT, "reason": reason, "last_sched_eval": SUBMIT}
    job.update(kw)
    return job


def test_show_job_running():
    job = running(24, "run_multi", ["n1", "n2"], [4, 4], [1024, 1024], priority=1250,
                  spec={"ntasks": 8, "nodes_min": 2})
    assert showfmt.format_job(job, NOW) == ref("busy_scontrol_show_job_running.txt")


def test_show_job_oneliner():
    job = running(24, "run_multi", ["n1", "n2"], [4, 4], [1024, 1024], priority=1250,
                  spec={"ntasks": 8, "nodes_min": 2})
    assert showfmt.format_job(job, NOW, oneliner=True) == ref("busy_scontrol_show_job_oneliner.txt")


def test_show_job_running_gpu():
    job = running(26, "run_gpu", ["n3"], [1], [1024], spec={"mem_per_node": 1024, "gres": "gres=gpu:4"})
    assert showfmt.format_job(job, NOW) == ref("busy_scontrol_show_job_running_gpu.txt")


def test_show_job_details():
    job = running(26, "run_gpu", ["n3"], [1], [1024], spec={"mem_per_node": 1024, "gres": "gres=gpu:4"},
                  cpu_ids=["2"], gres_detail=["gpu:4(IDX:0-3)"])
    assert showfmt.format_job(job, NOW, details=True) == ref("busy_scontrol_show_job_details.txt")
    # Without the optional allocation details the layout stays, CPU_IDs is left out.
    del job["cpu_ids"], job["gres_detail"]
    assert "\n     Nodes=n3 Mem=1024 GRES=\n" in showfmt.format_job(job, NOW, details=True)


def test_show_job_pending_resources():
    job = pending(28, "pend_res", "Nodes_required_for_job_are_DOWN,_DRAINED_or_reserved_for_jobs_in_higher_"
                  "priority_partitions", priority=1625, eligible_time=SUBMIT, last_sched_eval=t("15:45:04"),
                  spec={"nodes_min": 8, "nodes_max": 8, "ntasks": 8, "exclusive": True})
    assert showfmt.format_job(job, NOW, def_mem_per_cpu=256) == ref("busy_scontrol_show_job_pending_resources.txt")


def test_show_job_held():
    job = pending(29, "pend_held", "JobHeldUser", priority=0, held_by="user", spec={"hold": True})
    assert showfmt.format_job(job, NOW, def_mem_per_cpu=256) == ref("busy_scontrol_show_job_held.txt")


def test_show_job_dependency():
    job = pending(30, "pend_dep", "Dependency", spec={"dependency": "afterok:24"})
    assert showfmt.format_job(job, NOW, def_mem_per_cpu=256) == ref("busy_scontrol_show_job_dependency.txt")


def test_show_job_begin():
    job = pending(31, "pend_begin", "BeginTime", spec={"begin_time": SUBMIT + 3600})
    assert showfmt.format_job(job, NOW, def_mem_per_cpu=256) == ref("busy_scontrol_show_job_begin.txt")


def _array_jobs() -> list[dict]:
    meta = pending(27, "arr_lim", "JobArrayTaskLimit", array_job_id=27, array_pending=[2, 3, 4, 5],
                   eligible_time=SUBMIT, last_sched_eval=START,
                   spec={"array_spec": "0-5%2", "array_indices": [0, 1, 2, 3, 4, 5], "array_max_running": 2})
    tasks = []
    for job_id, task, node in ((36, 1, "n4"), (35, 0, "n3")):
        tasks.append(running(job_id, "arr_lim", [node], [1], [256], array_job_id=27, array_task_id=task,
                             spec={"array_spec": "0-5%2", "array_indices": [0, 1, 2, 3, 4, 5],
                                   "array_max_running": 2}))
    return [meta] + tasks


def test_show_job_array():
    text = "".join(showfmt.format_job(j, NOW, def_mem_per_cpu=256) for j in _array_jobs())
    assert text == ref("busy_scontrol_show_job_array.txt")


def test_show_job_array_task():
    assert showfmt.format_job(_array_jobs()[1], NOW) == ref("busy_scontrol_show_job_array_task.txt")


def test_show_job_completed_and_failed():
    done = running(33, "done_ok", ["n4"], [1], [256], state="COMPLETED", end_time=START,
                   submit_time=t("15:44:41"), eligible_time=t("15:44:41"), spec={"command": None})
    assert showfmt.format_job(done, NOW) == ref("busy_scontrol_show_job_completed.txt")
    failed = running(34, "done_fail", ["n4"], [1], [256], state="FAILED", end_time=START, exit_code=3,
                     submit_time=t("15:44:41"), eligible_time=t("15:44:41"),
                     spec={"command": None})
    assert showfmt.format_job(failed, NOW) == ref("busy_scontrol_show_job_failed.txt")


# ------------------------------------------------------------------ nodes and partitions
BOOT = t("15:20:15")
SLURMD = t("15:44:33")
OS = "Linux 6.18.44-fc-v669 #1 SMP PREEMPT_DYNAMIC @0"


def node(name: str, port: int, **kw) -> dict:
    base = {"name": name, "port": port, "cpus": 4, "cores_per_socket": 4, "real_memory": 2800,
            "gres": ["gpu:4"], "partitions": ["debug"], "responding": True, "boot_time": BOOT,
            "slurmd_start_time": SLURMD, "cpu_load": 1.47, "free_mem": 23829, "os": OS, "arch": "x86_64",
            "version": "22.05.8", "state": "IDLE"}
    base.update(kw)
    return base


def test_show_node_idle():
    assert showfmt.format_node(node("n1", 17001)) == ref("idle_scontrol_show_node_n1.txt")


def test_show_node_drained():
    n8 = node("n8", 17008, free_mem=23827, drain=True, state="IDLE+DRAIN", reason="anchor drain test",
              reason_user="root", reason_time=t("15:44:41"))
    assert showfmt.format_node(n8) == ref("busy_scontrol_show_node_n8_drained.txt")


def test_show_node_busy_mixed():
    text = ref("busy_scontrol_show_node.txt")
    n3 = node("n3", 17003, alloc_cpus=3, alloc_mem=1536, state="MIXED", last_busy_time=t("15:44:36"))
    record = text.split("\n\n")[2] + "\n\n"
    assert showfmt.format_node(n3) == record


def test_show_partition():
    nodes = {f"n{i}": node(f"n{i}", 17000 + i) for i in range(1, 9)}
    part = {"name": "debug", "nodes": list(nodes), "default": True}
    assert showfmt.format_partition(part, nodes) == ref("idle_scontrol_show_partition.txt")


# ------------------------------------------------------------------ the command, with a fake controller
def test_show_unknown_job_error():
    from plurm.wire.client import ClientError

    sc = FakeScontrol({"job_info": ClientError("Invalid job id specified", "InvalidJobId")})
    rc, out, err = run(sc, ["show", "job", "999999"])
    assert (rc, out) == (1, "")
    assert err == (REF / "err_scontrol_show_unknown_job.stderr.txt").read_text()


def test_show_array_order_and_request():
    jobs = _array_jobs()
    sc = FakeScontrol({"job_info": {"jobs": [jobs[2], jobs[0], jobs[1]], "now": NOW},
                       "config": {"options": {"DefMemPerCPU": "256"}}})
    rc, out, err = run(sc, ["show", "job", "27"])
    assert rc == 0 and err == ""
    assert out == ref("busy_scontrol_show_job_array.txt")
    assert sc.sent[0] == ("job_info", {"all_states": True, "job_ids": ["27"]})


def test_hold_release_update_requests():
    sc = FakeScontrol({"update_job": {"results": [{"job": "12", "job_id": 12}]}})
    assert run(sc, ["uhold", "12"])[0] == 0
    assert run(sc, ["release", "12"])[0] == 0
    assert run(sc, ["update", "JobId=12", "TimeLimit=10", "Partition=x"])[0] == 0
    assert sc.sent == [("update_job", {"job_ids": ["12"], "fields": {"hold": "user"}}),
                       ("update_job", {"job_ids": ["12"], "fields": {"release": "1"}}),
                       ("update_job", {"job_ids": ["12"], "fields": {"TimeLimit": "10", "Partition": "x"}})]


def test_hold_error_and_unsupported_key():
    sc = FakeScontrol({"update_job": {"results": [{"job": "12", "error": "Job is no longer pending execution",
                                                   "code": "NotPending"}]}})
    rc, out, err = run(sc, ["hold", "12"])
    assert rc == 1 and err == "Job is no longer pending execution for job 12\n"
    sc = FakeScontrol({})
    rc, out, err = run(sc, ["update", "JobId=12", "Bogus=1"])
    assert rc == 1 and "Update of this parameter is not supported: Bogus=1" in err
    assert sc.sent == []


def test_update_node_drain():
    sc = FakeScontrol({"update_node": {"ok": True}})
    assert run(sc, ["update", "NodeName=n[1-2]", "State=DRAIN", "Reason=maint"])[0] == 0
    assert sc.sent == [("update_node", {"nodes": ["n1", "n2"], "state": "DRAIN", "reason": "maint"})]
    rc, _, err = run(FakeScontrol({}), ["update", "NodeName=n1", "State=DRAIN"])
    assert rc == 1 and "You must specify a reason" in err


def test_hostnames_from_environment(monkeypatch):
    # 22.05 reads SLURM_NODELIST (SLURM_JOB_NODELIST alone: "host list is empty", exit 0)
    monkeypatch.delenv("SLURM_JOB_NODELIST", raising=False)
    monkeypatch.setenv("SLURM_NODELIST", "n[1-3,7]")
    rc, out, _ = run(scontrol.Scontrol(), ["show", "hostnames"])
    assert rc == 0 and out == (REF / "busy_scontrol_hostnames.txt").read_text()
    monkeypatch.delenv("SLURM_NODELIST")
    monkeypatch.setenv("SLURM_JOB_NODELIST", "n[1-3,7]")
    assert run(scontrol.Scontrol(), ["show", "hostnames"]) == (0, "", "scontrol: error: host list is empty\n")
    rc, out, _ = run(scontrol.Scontrol(), ["show", "hostlist", "n1,n2,n3,n7"])
    assert out == "n[1-3,7]\n"


def test_help_and_version():
    out = io.StringIO()
    with redirect_stdout(out):
        assert scontrol.main(["--help"]) == 0
    assert out.getvalue() == (REF / "help_scontrol.txt").read_text()
    out = io.StringIO()
    with redirect_stdout(out):
        assert scontrol.main(["-V"]) == 0
    assert out.getvalue() == (REF / "version_squeue.txt").read_text().replace("slurm-wlm ", "slurm ")  # upstream's form


def test_show_config_layout():
    text = showconfig.format_config({"ClusterName": "anchor", "DefMemPerCPU": "256", "GresTypes": "gpu",
                                     "MailProg": "/bin/true"}, "/etc/slurm/slurm.conf", "anchor",
                                    t("15:44:33"), "vm(localhost)")
    expected = (REF / "idle_scontrol_show_config.txt").read_text().splitlines()
    got = text.splitlines()
    assert len(got) == len(expected)
    assert [line.split(" = ")[0] for line in got] == [line.split(" = ")[0] for line in expected]
    for line in ("ClusterName             = anchor", "DefMemPerCPU            = 256",
                 "GresTypes               = gpu", "SLURM_VERSION           = 22.05.8"):
        assert line in got
    assert got[0] == expected[0]


def test_hold_by_job_name():
    sc = FakeScontrol({"job_info": {"jobs": [{"job_id": 41, "spec": {"name": "pend"}}]},
                       "update_job": {"results": [{"job": "41", "job_id": 41}]}})
    assert run(sc, ["hold", "pend"])[0] == 0
    assert sc.sent == [("job_info", {"names": ["pend"], "states": ["PENDING"]}),
                       ("update_job", {"job_ids": ["41"], "fields": {"hold": "admin" if os.getuid() == 0
                                                                     else "user"}})]


def test_unreachable_controller_message():
    from plurm.wire.client import ClientError

    sc = FakeScontrol({"job_info": ClientError("Unable to contact slurm controller (connect failure): "
                                               "Connection refused", "ConnectError")})
    rc, out, err = run(sc, ["show", "job"])
    assert rc == 1 and err == "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n"


def test_main_options_before_command(monkeypatch):
    monkeypatch.delenv("SLURM_NODELIST", raising=False)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        assert scontrol.main(["-o", "-d", "show", "hostnames", "n[1-2]"]) == 0
        assert scontrol.main(["--bogus"]) == 1
        assert scontrol.main(["show", "hostlist"]) == 1
    assert out.getvalue() == "n1\nn2\n"
    assert "scontrol: unrecognized option '--bogus'" in err.getvalue()


def test_quiet_hides_update_errors():
    sc = FakeScontrol({"update_job": {"results": [{"job": "12", "error": "Job is no longer pending execution",
                                                   "code": "NotPending"}]}})
    sc.quiet = True
    assert run(sc, ["release", "12"]) == (1, "", "")
