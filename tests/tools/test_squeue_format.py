"""squeue's output, formatted from job dicts, compared byte for byte with Slurm 22.05's."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from plurm.tools import squeue, squeuefmt
from plurm.common.cli import OptionError, getopt_long
from plurm.tools.display import format_elapsed, pad, parse_format

REF = Path(__file__).resolve().parents[3] / "shared" / "reference" / "slurm-22.05"
if not REF.is_dir():
    REF = Path("/work/shared/reference/slurm-22.05")

# The capture ran at 15:45:16 local time; running jobs had run 13 s.
NOW = time.mktime((2026, 11, 29, 15, 45, 16, 0, 0, -1))
STARTED = NOW - 13
UNLIMITED_RUN = 365 * 24 * 60  # a job started without a limit gets 365 days


def ref(name: str) -> str:
    return (REF / f"{name}.txt").read_text()


def job(job_id, name, state="PENDING", priority=1000, **kw):
    spec = {"name": name}
    for key in ("nodes_min", "gres", "mem_per_node", "exclusive", "begin_time", "array_max_running", "ntasks"):
        if key in kw:
            spec[key] = kw.pop(key)
    rec = {"job_id": job_id, "spec": spec, "partition": "debug", "priority": priority, "submit_time": NOW - 20}
    if state != "PENDING":
        rec["state"] = state
    rec.update(kw)
    return rec


def running(job_id, name, nodes, cpus, time_limit=UNLIMITED_RUN, **kw):
    return job(job_id, name, "RUNNING", priority=500, nodes=nodes, cpus=cpus, start_time=STARTED,
               time_limit=time_limit, **kw)


LONG_REASON = "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions"


def busy_jobs():
    """The busy cluster of capture.sh, in the controller's order (job id; an array's
    pending remainder is the newest record, as in Slurm)."""
    return [
        running(24, "run_multi", ["n1", "n2"], [4, 4], ntasks=8),
        running(25, "run_one", ["n3"], [1], time_limit=10),
        running(26, "run_gpu", ["n3"], [1], gres="gres=gpu:4", mem_per_node=1024),
        running(27, "arr_lim", ["n3"], [1], array_job_id=27, array_task_id=0, array_max_running=2),
        job(28, "pend_res", priority=900, nodes_min=8, exclusive=True, reason=LONG_REASON),
        job(29, "pend_held", priority=0, reason="JobHeldUser"),
        job(30, "pend_dep", priority=700, reason="Dependency"),
        job(31, "pend_begin", priority=850, begin_time=NOW + 3564, reason="BeginTime"),
        job(32, "pend_arr", priority=950, nodes_min=8, exclusive=True, reason="Priority",
            array_job_id=32, array_pending=list(range(10))),
        running(35, "arr_lim", ["n4"], [1], array_job_id=27, array_task_id=1, array_max_running=2),
        job(36, "arr_lim", priority=800, reason="JobArrayTaskLimit", array_job_id=27,
            array_pending=[2, 3, 4, 5], array_max_running=2),
    ]


def finished_jobs():
    """The finished jobs still in memory (squeue -t all), priorities in Slurm's order."""
    out = []
    prio = 400

    def done(job_id, name, state, nodes=(), reason="None", nodes_min=1, **kw):
        nonlocal prio
        prio -= 1
        extra = {"start_time": STARTED - 60, "end_time": STARTED - 60} if nodes else {}
        extra.update(kw)
        rec = job(job_id, name, state, priority=prio, nodes=list(nodes), cpus=[1] * len(nodes), reason=reason,
                  nodes_min=nodes_min, **extra)
        out.append(rec)

    done(14, "ok.sh", "CANCELLED", nodes_min=99)
    done(15, "ok.sh", "CANCELLED")
    done(22, "hostname", "COMPLETED", ["n1", "n2"])
    done(1, "x", "COMPLETED", ["n1"], array_job_id=1, array_task_id=0)
    done(2, "y", "COMPLETED", ["n2"], array_job_id=2, array_task_id=0)
    done(7, "x", "COMPLETED", ["n1"], array_job_id=1, array_task_id=1)
    done(8, "y", "COMPLETED", ["n2"], array_job_id=2, array_task_id=1)
    for job_id, name, node in ((20, "ok.sh", "n3"), (33, "done_ok", "n4"), (23, "bash", "n1"),
                               (10, "ok.sh", "n1"), (16, "ok.sh", "n1"), (18, "ok.sh", "n1"),
                               (19, "ok.sh", "n1"), (3, "env.sh", "n3"), (4, "gpus3", "n3")):
        done(job_id, name, "COMPLETED", [node])
    done(5, "arrdef", "COMPLETED", ["n3"], array_job_id=5, array_task_id=3)
    done(6, "pat", "COMPLETED", ["n4"])
    done(9, "arrdef", "COMPLETED", ["n3"], array_job_id=5, array_task_id=5)
    done(34, "done_fail", "FAILED", ["n4"], reason="NonZeroExitCode")
    for job_id in (11, 12, 13):
        done(job_id, "ok.sh", "FAILED", reason="BadConstraints")
    return out


def run(argv, jobs, now=NOW, default_mem=256):
    opts = squeue.parse_args(argv, environ={})
    return squeuefmt.format_jobs(jobs, opts, squeuefmt.Context(now, default_mem, environ={}))


@pytest.mark.parametrize("name, argv", [
    ("busy_squeue", []),
    ("busy_squeue_l", ["-l"]),
    ("busy_squeue_r", ["-r"]),
    ("busy_squeue_t_PD", ["-t", "PD"]),
    ("busy_squeue_start", ["--start"]),
    ("busy_squeue_format_custom", ["-o", "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R %b %C %m"]),
])
def test_busy_cluster(name, argv):
    assert run(argv, busy_jobs()) == ref(name)


def test_states_all():
    assert run(["-t", "all"], finished_jobs() + busy_jobs()) == ref("busy_squeue_states_all")


def test_job_array_by_id():
    jobs = [j for j in busy_jobs() if j.get("array_job_id") == 27]
    jobs = [jobs[2], jobs[1], jobs[0]]  # the controller's order for one array
    assert run(["-j", "27"], jobs) == ref("busy_squeue_array")


def test_idle_and_pending_reasons():
    assert run([], []) == ref("idle_squeue")
    jobs = [job(14, "ok.sh", nodes_min=99, priority=10, reason="PartitionConfig"),
            job(15, "ok.sh", priority=11, reason="PartitionConfig")]
    assert run([], jobs) == ref("err_accepted_pending_reasons")


def test_noheader_and_default_filter():
    out = run(["-h"], finished_jobs() + busy_jobs())
    assert out == "".join(ref("busy_squeue").splitlines(keepends=True)[1:])


def test_help_usage_version(capsys):
    with pytest.raises(squeue.Usage) as info:
        squeue.parse_args(["--help"], environ={})
    assert info.value.text == ref("help_squeue") and info.value.code == 0
    for argv in (["-V"], ["--version"]):  # upstream's line (test_point10_version.py), not Debian's
        with pytest.raises(squeue.Usage) as info:
            squeue.parse_args(argv, environ={})
        assert info.value.code == 0 and capsys.readouterr().out == ref("version_squeue").replace("slurm-wlm ", "slurm ")


def test_option_errors():
    with pytest.raises(squeue.Usage) as info:
        squeue.parse_args(["--bogus"], environ={})
    assert info.value.code == 1
    assert info.value.text == "squeue: unrecognized option '--bogus'\nTry \"squeue --help\" for more information\n"
    with pytest.raises(squeue.Usage) as info:
        squeue.parse_args(["-t", "XX"], environ={})
    assert info.value.text.startswith("squeue: error: Invalid job state specified: XX\n")
    with pytest.raises(squeue.Usage):
        squeue.parse_args(["-l", "-o", "%i"], environ={})


def test_state_names_and_lists():
    opts = squeue.parse_args(["--states=pd,running", "-u", "root,alice", "-p", "debug", "--name=a,b"], environ={})
    assert opts.states == ["PENDING", "RUNNING"]
    assert squeue._request_body(opts) == {"states": ["PENDING", "RUNNING"], "all_states": True,
                                          "users": ["root", "alice"], "partitions": ["debug"],
                                          "names": ["a", "b"]}
    assert squeue.parse_args(["-t", "all"], environ={}).all_states


def test_jobs_operand_and_attached():
    assert squeue.parse_args(["-j", "27"], environ={}).jobs == ["27"]
    assert squeue.parse_args(["-j27_1,28"], environ={}).jobs == ["27_1", "28"]
    assert squeue.parse_args(["--jobs=12"], environ={}).jobs == ["12"]
    with pytest.raises(squeue.Usage):
        squeue.parse_args(["-j", "abc"], environ={})


def test_completing_and_many_fields():
    rec = running(40, "longer_name_here", ["n1", "n2", "n3"], [2, 2, 2], time_limit=90,
                  array_job_id=None)
    rec["completing"] = True
    rec["state"] = "COMPLETED"
    rec["end_time"] = STARTED + 3725
    out = run(["-h", "-o", "%i|%A|%F|%K|%t|%T|%M|%l|%L|%D|%C|%R|%N|%P|%j|%10j|%.3j|%Q"], [rec])
    assert out == ("40|40|40|N/A|CG|COMPLETING|1:02:05|1:30:00|27:55|3|6|n[1-3]|n[1-3]|debug|"
                   "longer_name_here|longer_nam|lon|500\n")


def test_prefix_suffix_and_invalid_letter():
    rec = running(41, "j", ["n1"], [1])
    assert run(["-h", "-o", "id=%i;st=%t;"], [rec]) == "id=41;st=R;\n"
    fields, errors = squeuefmt.build_fields("%i %!", None)
    assert errors == ["squeue: error: Invalid job format specification: !\n"]


def test_long_format_O():
    rec = running(42, "abc", ["n1"], [1])
    out = run(["-O", "JobID,Name:5,State:.10 |"], [rec])
    assert out == ("JOBID               NAME      STATE |\n"
                   "42                  abc     RUNNING |\n")


def test_elapsed_and_pad():
    assert [format_elapsed(s) for s in (13, 600, 3723, 86400)] == ["0:13", "10:00", "1:02:03", "1-00:00:00"]
    assert pad("abcdef", 4, False) == "abcd"
    assert pad("abcdef", 4, True) == "abcd"
    assert pad("abcdef", 4, True, cut=False) == "abcdef"
    assert pad("ab", 4, True) == "  ab"
    assert parse_format("x%.5i%P ")[0].suffix == "x"


def test_getopt_long_forms():
    opts, rest = getopt_long("p", ["-ho", "%i", "--sort=i", "--for", "%j", "op"], "ho:S:",
                             {"sort": ("S", 1), "format": ("o", 1)})
    assert opts == [("h", None), ("o", "%i"), ("S", "i"), ("o", "%j")] and rest == ["op"]
    with pytest.raises(OptionError):
        getopt_long("p", ["-o"], "o:", {})


def test_sort_option():
    jobs = busy_jobs()
    out = run(["-h", "-S", "i", "-o", "%i"], jobs)
    assert out.split() == ["24", "25", "26", "27_0", "27_1", "28", "29", "30", "31", "32_[0-9]",
                           "27_[2-5%2]"]
    with pytest.raises(squeue.Usage):
        squeuefmt.sort_jobs(jobs, "!", NOW)


def test_one_pending_array_task_by_id():
    jobs = [j for j in busy_jobs() if j.get("array_job_id") == 27]
    out = run(["-h", "-j", "27_3", "-o", "%i %t"], [jobs[-1]])
    assert out == "27_3 PD\n"
    out = run(["-h", "-j", "27", "-o", "%i %t"], [jobs[-1]])
    assert out == "27_[2-5%2] PD\n"


def test_format_all():
    out = run(["-o", "%all"], [running(43, "abc", ["n1"], [1])])
    header, line = out.splitlines()
    assert header.startswith("ACCOUNT|TRES_PER_NODE|MIN_CPUS|") and header.endswith("|SCHEDNODES|WORK_DIR")
    assert len(header.split("|")) == len(line.split("|"))


def test_verbose_dump_of_set_options():
    """squeue -v's dump with most options given, as the real 22.05 printed it for
    ``squeue -v -u daemon,root -t PD,R -p debug -o "%i %j" -S i -j 1,2 -n a,b -w n1 -a -r``."""
    from plurm.tools.squeue_verbose import dump

    opts = squeue.parse_args(["-v", "-u", "daemon,root", "-t", "PD,R", "-p", "debug", "-o", "%i %j", "-S", "i",
                              "-j", "1,2", "-n", "a,b", "-w", "n1", "-a", "-r"], environ={})
    rule = "-----------------------------\n"
    assert dump(opts) == rule + (
        "all         = true\narray       = true\nfederation  = false\nformat      = %i %j\n"
        "iterate     = 0\njob_flag    = 1\njobs        = 1,2\nlicenses    = (null)\nlocal       = false\n"
        "names       = a,b\nnodes       = n1\npartitions  = debug\npriority    = false\n"
        "reservation = (null)\nsibling      = false\nsort        = i\nstart_flag  = 0\nstates      = PD,R\n"
        "step_flag   = 0\nsteps       = (null)\nusers       = daemon,root\nverbose     = 1\n") + rule
