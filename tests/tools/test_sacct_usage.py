"""sacct's usage columns (tools/sacctusage.py) and srun's gathering of its nodes' figures
(tools/srun_usage.py), pure: the sizes and times of helper E's captures of the real Slurm
22.05 (tests/integration/reference/cgroup/, jobacct_gather/cgroup) and sacct's unit rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from plurm.tools import sacctfmt
from plurm.tools.sacct import parse_args
from plurm.tools.sacctusage import StepUsage, convert_num, cpu_time, job_cpu_cells, mem, tres_time
from plurm.tools.srun_usage import StepUsage as Gathered

REF = Path(__file__).resolve().parents[1] / "integration" / "reference" / "cgroup"


def test_sizes_go_up_a_unit_only_while_exact() -> None:
    assert mem(207696) == "207696K"  # 207696 is no multiple of 512: stays in K
    assert mem(0) == "0" and mem(8) == "8K" and mem(1024) == "1M" and mem(1536) == "1.50M"
    assert mem(2621440) == "2.50G" and mem(4 * 1024 ** 2) == "4G"
    assert convert_num(1000) == "1000" and convert_num(4096) == "4K"  # (bytes, as sacct keeps them)


def test_units_and_noconvert() -> None:
    # cg.usage_sacct_units_M: 207700K -> 202.83M, 207712K -> 202.84M, 207608K -> 202.74M
    assert [mem(k, "M") for k in (207700, 207712, 207608, 1024)] == ["202.83M", "202.84M", "202.74M", "1M"]
    assert mem(3, "G") == "0.00G" and mem(2048, "K") == "2048K" and mem(0, "M") == "0"
    assert mem(207696, noconvert=True) == str(207696 * 1024)
    opts = parse_args(["--units=m", "--noconvert"])
    assert (opts.units, opts.noconvert) == ("M", True)


def test_cpu_times_as_sacct_prints_them() -> None:
    assert cpu_time(2.2619) == "00:02.261"  # cut, not rounded
    assert cpu_time(0) == "00:00:00" and cpu_time(59) == "00:00:59"  # whole seconds: no fraction
    assert cpu_time(61.5) == "01:01.500" and cpu_time(3600) == "01:00:00" and cpu_time(90061) == "1-01:01:01"
    assert tres_time(2.9) == "00:00:02" and tres_time(86400 * 2 + 5) == "2-00:00:05"


def test_a_one_task_step_as_the_capture_shows_it() -> None:
    step = {"step_id": "batch", "nodes": ["n1"], "ntasks": 1,
            "usage": {"max_rss_kb": 207700, "max_rss_node": "n1", "max_rss_task": 0, "ave_rss_kb": 207700,
                      "max_vmsize_kb": 207712, "max_vmsize_node": "n1", "max_vmsize_task": 0,
                      "ave_vmsize_kb": 207712, "user_cpu_s": 0.6021, "system_cpu_s": 1.6584}}
    row = {"TRESUsageInAve": "energy=0", "TRESUsageInTot": "energy=0"}
    StepUsage(step).apply(row)
    assert (row["MaxRSS"], row["MaxRSSNode"], row["MaxRSSTask"], row["AveRSS"]) == ("207700K", "n1", "0", "207700K")
    assert (row["MaxVMSize"], row["AveVMSize"]) == ("207712K", "207712K")
    assert (row["TotalCPU"], row["UserCPU"], row["SystemCPU"]) == ("00:02.260", "00:00.602", "00:01.658")
    assert (row["MinCPU"], row["MinCPUNode"], row["MinCPUTask"], row["AveCPU"]) == ("00:00:02", "n1", "0", "00:00:02")
    # cg.usage_sacct_long, but for fs/disk and pages (not measured)
    assert row["TRESUsageInMax"] == row["TRESUsageInAve"] == row["TRESUsageInTot"] == row["TRESUsageInMin"] == \
        "cpu=00:00:02,energy=0,mem=207700K,vmem=207712K"
    assert row["TRESUsageInMaxNode"] == row["TRESUsageInMinNode"] == "cpu=n1,energy=n1,mem=n1,vmem=n1"
    assert row["TRESUsageInMaxTask"] == row["TRESUsageInMinTask"] == "cpu=0,mem=0,vmem=0"


def test_the_long_capture_s_step_columns_that_plurm_measures() -> None:
    path = REF / "cg.usage_sacct_long.txt"
    if not path.is_file():
        pytest.skip("no capture cg.usage_sacct_long")
    header, *lines = path.read_text().splitlines()
    rows = [dict(zip(header.split("|"), line.split("|"))) for line in lines]
    want = next(r for r in rows if r["JobID"].endswith(".batch"))

    def kib(text: str) -> int:
        return int(text[:-1]) if text.endswith("K") else int(text) // 1024

    usage = {"max_rss_kb": kib(want["MaxRSS"]), "max_rss_task": int(want["MaxRSSTask"]),
             "ave_rss_kb": kib(want["AveRSS"]), "max_vmsize_kb": kib(want["MaxVMSize"]),
             "max_vmsize_task": int(want["MaxVMSizeTask"]), "ave_vmsize_kb": kib(want["AveVMSize"])}
    job = {"job_id": int(want["JobIDRaw"].split(".")[0]), "spec": {}, "nodes": ["n1"], "cpus": [1], "mem": [400]}
    step = {"job_id": job["job_id"], "step_id": "batch", "name": "batch", "nodes": ["n1"], "ntasks": 1, "cpus": 1,
            "start_time": 0.0, "end_time": float(sum(int(p) * 60 ** i for i, p in
                                                    enumerate(reversed(want["Elapsed"].split(":"))))),
            "state": want["State"], "usage": usage}
    got = sacctfmt.acct_step_row(step, job, 100.0, "c")
    for column in ("MaxVMSize", "MaxVMSizeNode", "MaxVMSizeTask", "AveVMSize", "MaxRSS", "MaxRSSNode", "MaxRSSTask",
                   "AveRSS", "NTasks", "AllocCPUS", "Elapsed", "State", "ExitCode", "ReqCPUFreqMin"):
        assert got[column] == want[column], column
    # (CPU times are compared with the captures in tests/corescheduler/test_played_node.py)


def test_the_job_line_sums_its_steps_cpu_and_has_no_sizes() -> None:
    steps = [{"usage": {"user_cpu_s": 0.6021, "system_cpu_s": 1.6584}},
             {"usage": {"user_cpu_s": 0.6113, "system_cpu_s": 1.6492}}, {"usage": {}}]
    assert job_cpu_cells(steps) == {"TotalCPU": "00:04.521", "UserCPU": "00:01.213", "SystemCPU": "00:03.307"}
    assert job_cpu_cells([{"usage": {}}]) == {}
    job = {"job_id": 5, "spec": {"name": "wrap"}, "state": "COMPLETED", "nodes": ["n1"], "cpus": [1],
           "start_time": 0.0, "end_time": 1.0}
    rows = sacctfmt.acct_rows([job], [dict(s, job_id=5, step_id=str(i), nodes=["n1"]) for i, s in enumerate(steps)],
                              2.0, "c")
    assert rows[0]["TotalCPU"] == "00:04.521" and "MaxRSS" not in rows[0]
    assert rows[1]["TotalCPU"] == "00:02.260" and "MaxRSS" not in rows[1]  # (no size measured)
    assert "TotalCPU" not in rows[3]  # nothing measured: sacct's empty cell


def test_srun_gathers_its_nodes_figures() -> None:
    gathered = Gathered()
    # n1 runs tasks 0 and 1 and repeats its figures in each task_exit; n2 runs task 2.
    n1 = {"oom_kills": 1, "usage": {"max_rss_kb": 300, "max_rss_task": 1, "ave_rss_kb": 200, "max_vmsize_kb": 900,
                                    "max_vmsize_task": 0, "ave_vmsize_kb": 800, "user_cpu_s": 2.0,
                                    "system_cpu_s": 0.5}}
    n2 = {"usage": {"max_rss_kb": 500, "max_rss_task": 2, "ave_rss_kb": 500, "max_vmsize_kb": 600,
                    "max_vmsize_task": 2, "ave_vmsize_kb": 600, "user_cpu_s": 1.0, "system_cpu_s": 0.25}}
    for node, task, body in (("n1", 0, n1), ("n1", 1, n1), ("n2", 2, n2), ("n2", 2, {"exit_code": 0})):
        gathered.add(node, task, body)
    assert gathered.oom_kills() == 1 and gathered.oom_node("n1") and not gathered.oom_node("n2")
    assert gathered.summary() == {
        "max_rss_kb": 500, "max_rss_node": "n2", "max_rss_task": 2,
        "max_vmsize_kb": 900, "max_vmsize_node": "n1", "max_vmsize_task": 0,
        "ave_rss_kb": 300.0, "ave_vmsize_kb": (800 * 2 + 600) / 3, "user_cpu_s": 3.0, "system_cpu_s": 0.75}
    assert Gathered().summary() == {} and Gathered().oom_kills() == 0


def test_srun_ignores_figures_of_the_wrong_type() -> None:
    gathered = Gathered()
    gathered.add("n1", 0, {"oom_kills": "many", "usage": {"max_rss_kb": "big", "user_cpu_s": True}})
    gathered.add("n1", 1, {"usage": "not a dict"})
    assert gathered.oom_kills() == 0 and gathered.summary() == {}
