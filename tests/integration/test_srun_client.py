"""srun's own options on real daemons (issue 14, srun-client), beside what the real Slurm
22.05.8 printed for the same commands (tests/integration/reference/srun-client/: each
capture*.sh was run on the anchor through /tmp/b15/anchor.sh, its output is capture*.txt).

-E/--preserve-env, -r/--relative, -T/--threads, --msg-timeout, --prolog/--epilog,
--exact/--whole/--overlap (steps sharing or waiting for the job's CPUs), --interactive, and
--resv-ports with MpiParams=ports.  The cluster has MpiParams=ports=12000-12009, as
capture5.sh's anchor had.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from plurmtest import Cluster, start_cluster

REF = Path(__file__).resolve().parent / "reference" / "srun-client"
PORTS = "12000-12009"


@pytest.fixture(scope="module")
def cl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = start_cluster(tmp_path_factory.mktemp("srunclient"), nodes=3, cpus=2, memory=1000)
    try:
        with open(c.conf, "a") as conf:
            conf.write(f"MpiParams=ports={PORTS}\n")
        c.run("scontrol", "reconfigure", check=True)
        yield c
    finally:
        c.down()


@pytest.fixture()
def scripts(tmp_path: Path) -> Path:
    """capture2.sh's prolog and epilog, logging into this test's directory."""
    log = tmp_path / "log"
    (tmp_path / "pro.sh").write_text(
        "#!/bin/bash\n"
        f'echo "PROLOG args=[$*] job=$SLURM_JOB_ID step=$SLURM_STEP_ID nodelist=$SLURM_NODELIST '
        f'ntasks=$SLURM_NTASKS nnodes=$SLURM_NNODES context=$SLURM_SCRIPT_CONTEXT" >> {log}\n'
        'echo "prolog stdout"\necho "prolog stderr" >&2\nexit ${PRO_RC:-0}\n')
    (tmp_path / "epi.sh").write_text(
        "#!/bin/bash\n"
        f'echo "EPILOG args=[$*] job=$SLURM_JOB_ID step=$SLURM_STEP_ID context=$SLURM_SCRIPT_CONTEXT" >> {log}\n'
        'echo "epilog stdout"\nexit ${EPI_RC:-0}\n')
    for name in ("pro.sh", "epi.sh"):
        (tmp_path / name).chmod(0o755)
    return tmp_path


def reference(capture: str, command: str) -> list[str]:
    """What the anchor printed for ``command`` (its ``$ command`` line up to ``[rc=N]``)."""
    lines = (REF / capture).read_text().splitlines()
    start = lines.index(f"$ {command}") + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("[rc="))
    return lines[start:end]


def srun_lines(text: str) -> list[str]:
    """srun's own lines, job ids and clock times as ``J`` and ``T``."""
    text = re.sub(r"\b(job|Job|allocation) \d+", r"\1 J", text)
    return [line for line in re.sub(r"\d{4}-\d\d-\d\dT[\d:]+", "T", text).splitlines() if line.startswith("srun:")]


def test_preserve_env_keeps_the_environments_counts(cl: Cluster) -> None:
    inner = ('SLURM_NTASKS=7 SLURM_NNODES=9 SLURM_JOB_NUM_NODES=9 srun {E} -n1 -N1 env | grep -E '
             '"^SLURM_(NNODES|NTASKS|JOB_NUM_NODES|NPROCS|STEP_NUM_TASKS|STEP_NUM_NODES)=" | sort')
    out = cl.run("salloc", "-N2", "-n4", "bash", "-c", inner.format(E="-E"), check=True).stdout.splitlines()
    want = [line for line in reference("capture1.txt", "salloc -N2 -n4 bash -c \"" + inner.format(E="-E")
                                       .replace('"', '\\"') + '"') if line.startswith("SLURM_")]
    assert out == want
    plain = cl.run("salloc", "-N2", "-n4", "bash", "-c", inner.format(E=""), check=True).stdout.splitlines()
    assert "SLURM_NTASKS=1" in plain and "SLURM_NPROCS=1" in plain  # without -E: the step's counts


def test_relative_starts_at_node_n_with_slurms_refusals(cl: Cluster) -> None:
    inner = ("srun -r1 -N1 printenv SLURMD_NODENAME; srun -r2 printenv SLURMD_NODENAME; srun -r1 -N3 printenv "
             "SLURMD_NODENAME; srun -r3 true; srun -r1 -w n1 true; srun -r -1 true; srun -r x true")
    done = cl.run("salloc", "-N3", "bash", "-c", inner)
    job = cl.request("job_info", {"all_states": True})["jobs"][-1]
    assert done.stdout.splitlines() == [job["nodes"][1]]  # the job's second node (the anchor's n2)
    want = [line for line in reference("capture1.txt", f'salloc -N3 bash -c "{inner}"') if line.startswith("srun:")]
    assert srun_lines(done.stderr) == want
    outside = cl.run("srun", "-r1", "true")
    assert (outside.returncode, srun_lines(outside.stderr)) == (1, reference("capture1.txt", "srun -r1 true"))


def test_threads_fanout_and_msg_timeout(cl: Cluster) -> None:
    many = cl.run("srun", "-T", "61", "-N1", "true")
    assert (many.returncode, srun_lines(many.stderr)) == (0, reference("capture2.txt", "srun -T 61 -N1 true"))
    one = cl.run("srun", "-T", "1", "-N2", "-l", "printenv", "SLURMD_NODENAME", check=True)
    assert sorted(one.stdout.split()) == ["0:", "1:", "n1", "n2"]  # one launch at a time, both nodes
    for option, value in (("-T", "0"), ("--msg-timeout", "0"), ("--msg-timeout", "abc")):
        bad = cl.run("srun", f"{option}={value}" if option.startswith("--") else option, *([] if option.startswith(
            "--") else [value]), "true")
        name = "--threads" if option == "-T" else option
        assert (bad.returncode, bad.stderr.strip()) == (1, f'srun: error: Invalid numeric value "{value}" for {name}.')
    # A node that does not answer the launch: srun gives up after --msg-timeout, not MessageTimeout.
    pid = int((cl.dir / "run" / "plurmd-n3.pid").read_text())
    os.kill(pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        stuck = cl.run("srun", "--msg-timeout=1", "-w", "n3", "true", timeout=9)  # (MessageTimeout is 10 s)
        took = time.monotonic() - started
    finally:
        os.kill(pid, signal.SIGCONT)
    assert stuck.returncode != 0 and "failed on node n3" in stuck.stderr, (took, stuck.stderr)


def test_prolog_and_epilog_run_by_srun(cl: Cluster, scripts: Path) -> None:
    log = scripts / "log"
    ok = cl.run("srun", "-N2", f"--prolog={scripts}/pro.sh", f"--epilog={scripts}/epi.sh", "echo", "task", "a", "b",
                cwd=scripts)
    assert ok.returncode == 0
    assert ok.stdout.splitlines() == ["prolog stdout", "task a b", "task a b", "epilog stdout"]
    assert ok.stderr.splitlines() == ["prolog stderr"]
    job = re.search(r"job=(\d+)", log.read_text()).group(1)
    assert log.read_text().splitlines() == [
        f"PROLOG args=[echo task a b] job={job} step=0 nodelist=n[1-2] ntasks=2 nnodes=2 context=prolog_srun",
        f"EPILOG args=[echo task a b] job={job} step=0 context=epilog_srun"]
    log.unlink()
    # A failing prolog aborts the step (its tasks never start here); the epilog still runs.
    failed = cl.run("srun", "-N1", f"--prolog={scripts}/pro.sh", f"--epilog={scripts}/epi.sh", "sleep", "5",
                    env={"PRO_RC": "3"})
    want = reference("capture6.txt", "PRO_RC=3 srun -N1 --prolog=/tmp/sc/pro.sh --epilog=/tmp/sc/epi.sh sleep 5")
    assert failed.returncode == 137
    assert srun_lines(failed.stderr) == [line for line in srun_lines("\n".join(want))
                                         if "launch_p_step_launch" not in line and "task 0: Killed" not in line]
    assert "epilog stdout" in failed.stdout and "EPILOG" in log.read_text()
    # A failing epilog is said; srun's code stays the task's.
    epi = cl.run("srun", "-N1", f"--epilog={scripts}/epi.sh", "sh", "-c", "exit 2", env={"EPI_RC": "4"})
    assert (epi.returncode, srun_lines(epi.stderr)) == (2, srun_lines("\n".join(reference(
        "capture2.txt", 'EPI_RC=4 srun -N1 --prolog=/tmp/sc/pro.sh --epilog=/tmp/sc/epi.sh sh -c "exit 2"'))))


@pytest.mark.slow
def test_prolog_none_and_missing_programs(cl: Cluster) -> None:
    # none, and a program that cannot run: the step goes on.
    for args in (["--prolog=/tmp/sc/missing", "--epilog=none"], ["--prolog=none", "--epilog=/tmp/sc/missing"]):
        done = cl.run("srun", "-N1", *args, "echo", "task")
        want = reference("capture2.txt", f"srun -N1 {' '.join(args)} echo task")
        assert (done.returncode, done.stdout.splitlines(), srun_lines(done.stderr)) == \
            (0, [line for line in want if line == "task"], srun_lines("\n".join(want)))


@pytest.mark.slow
def test_srun_prolog_and_epilog_of_slurm_conf(cl: Cluster, scripts: Path) -> None:
    # SrunProlog/SrunEpilog (slurm.conf, read by srun itself) unless --prolog/--epilog say otherwise
    saved = cl.conf.read_text()
    try:
        cl.conf.write_text(saved + f"SrunProlog={scripts}/pro.sh\nSrunEpilog={scripts}/epi.sh\n")
        done = cl.run("srun", "-N1", "echo", "task", check=True)
        assert done.stdout.splitlines() == ["prolog stdout", "task", "epilog stdout"]
        none = cl.run("srun", "-N1", "--prolog=none", "--epilog=none", "echo", "task", check=True)
        assert none.stdout.splitlines() == ["task"]
    finally:
        cl.conf.write_text(saved)
    assert [line.split()[0] for line in (scripts / "log").read_text().splitlines()] == ["PROLOG", "EPILOG"]


EXACT = ("srun -n1 --exact sleep 4 & sleep 1; srun -n1 --exact echo second; srun -n2 --exact echo third; wait; "
         "sacct -j \\$SLURM_JOB_ID -n -P --format=jobid,alloccpus,ntasks,state")
# No race on a loaded host: the first step holds its CPUs until told, and says when it runs;
# it is told once the waiting srun said "retrying" (or that srun ended without waiting).
HOLD = ('srun -n1 {opts} bash -c "{say}touch {d}/held; until [ -e {d}/go ]; do sleep 0.1; done" & '
        'until [ -e {d}/held ]; do sleep 0.1; done; ')
WAITS = ('(until grep -q retrying {d}/err 2>/dev/null || [ -e {d}/go ]; do sleep 0.1; done; touch {d}/go) & '
         '{cmd} 2>{d}/err; touch {d}/go; cat {d}/err >&2; ')


def hold(d: Path, opts: str, say: str = "") -> str:
    return HOLD.format(opts=opts, d=d, say=say)


def waits(d: Path, cmd: str) -> str:
    return WAITS.format(d=d, cmd=cmd)


def test_exact_steps_share_the_job_and_wait_for_its_cpus(cl: Cluster, tmp_path: Path) -> None:
    # 22.05.8: two one-CPU --exact steps at once in a two-CPU job; a two-CPU one waits for them.
    inner = hold(tmp_path, "--exact") + "srun -n1 --exact echo second; " + \
        waits(tmp_path, "srun -n2 --exact echo third") + "wait; " + EXACT.split("wait; ", 1)[1].replace("\\$", "$")
    done = cl.run("salloc", "-N1", "-n2", "bash", "-c", inner, check=True)
    want = reference("capture3.txt", f'salloc -N1 -n2 bash -c "{EXACT}"')
    assert done.stdout.splitlines()[:3] == [line for line in want if line in ("second", "third")]
    assert srun_lines(done.stderr) == srun_lines("\n".join(want))
    acct = [line.split("|")[1:3] for line in done.stdout.splitlines() if "|" in line and "." in line.split("|")[0]]
    assert acct == [["1", "1"], ["1", "1"], ["2", "2"]]  # AllocCPUS, NTasks of steps 0, 1, 2
    both = cl.run("srun", "--exact", "--whole", "true", env={"SLURM_EXACT": "1"})
    assert (both.returncode, both.stderr.strip()) == (1, "srun: error: --exact and --whole are mutually exclusive.")


@pytest.mark.slow
def test_exact_other_node_whole_waits_overlap_never(cl: Cluster, tmp_path: Path) -> None:
    # --exact -N1 beside a running --exact step: the job's other node.
    for name in "abc":
        (tmp_path / name).mkdir()
    two = cl.run("salloc", "-N2", "-n2", "bash", "-c", hold(tmp_path / "a", "-N1 --exact") + waits(
        tmp_path / "a", "srun -n1 -N1 --exact printenv SLURMD_NODENAME") + "printenv SLURM_JOB_NODELIST; wait",
        check=True)
    node, nodes = two.stdout.split()
    assert node != "n1" and node in ("n2", "n3") and nodes.startswith("n")
    # --whole waits for whole nodes; --overlap holds and waits for nothing.
    whole = cl.run("salloc", "-N1", "-n2", "bash", "-c", hold(tmp_path / "b", "--exact")
                   + waits(tmp_path / "b", "srun -n1 --whole echo whole") + "wait", check=True)
    assert srun_lines(whole.stderr) == ["srun: Job J step creation temporarily disabled, retrying (Requested nodes "
                                        "are busy)", "srun: Step created for job J"]
    overlap = cl.run("salloc", "-N1", "-n2", "bash", "-c", hold(tmp_path / "c", "--exact --overlap")
                     + waits(tmp_path / "c", "srun -n2 --exact echo overlapped") + "wait", check=True)
    assert overlap.stdout.split() == ["overlapped", "overlapped"] and not srun_lines(overlap.stderr)


def test_interactive_step(cl: Cluster) -> None:
    done = cl.run("salloc", "-N1", "srun", "--interactive", "printenv", "SLURM_STEP_ID", check=True)
    assert done.stdout.split() == reference("capture3b.txt", "salloc -N1 srun --interactive printenv SLURM_STEP_ID")[1:2]


def test_resv_ports_from_mpiparams(cl: Cluster) -> None:
    ports = cl.run("srun", "-N1", "--resv-ports=4", "printenv", "SLURM_STEP_RESV_PORTS", check=True).stdout.strip()
    assert len(_ports(ports)) == 4 and _ports(ports) <= set(range(12000, 12010))  # (dealt cyclically: may wrap)
    # by default the busiest node's tasks + 1 (22.05.8: -N1 -n3: 4 ports), the same in every task
    two = cl.run("srun", "-N1", "-n2", "-l", "printenv", "SLURM_STEP_RESV_PORTS", check=True).stdout.split("\n")
    values = {line.split(": ")[1] for line in two if line}
    assert len(values) == 1 and _count(values.pop()) == 3
    too_many = cl.run("srun", "-N1", "--resv-ports=11", "printenv", "SLURM_STEP_RESV_PORTS")
    assert (too_many.returncode, srun_lines(too_many.stderr)) == (1, srun_lines("\n".join(
        reference("capture5.txt", "srun -N1 --resv-ports=11 printenv SLURM_STEP_RESV_PORTS"))))
    bare = cl.run("srun", "-N1", "--resv-ports", "printenv", "SLURM_STEP_RESV_PORTS")  # (22.05.8: none)
    assert bare.returncode == 1 and bare.stdout == ""


@pytest.mark.slow
def test_resv_ports_never_shared_by_running_steps(cl: Cluster, tmp_path: Path) -> None:
    whole_pool = cl.run("srun", "-N1", "--resv-ports=10", "printenv", "SLURM_STEP_RESV_PORTS", check=True)
    assert whole_pool.stdout.strip() == PORTS
    # Two running steps never share a port; a step that needs ports held by running ones waits.
    inner = (hold(tmp_path, "--exact --resv-ports=7", say="echo A \\$SLURM_STEP_RESV_PORTS; ")
             + "srun -n1 --exact --resv-ports=3 printenv SLURM_STEP_RESV_PORTS; "
             + waits(tmp_path, "srun -n1 --exact --resv-ports=4 printenv SLURM_STEP_RESV_PORTS") + "wait")
    done = cl.run("salloc", "-N1", "-n2", "bash", "-c", inner, check=True)
    a, b, c = done.stdout.splitlines()
    held_a, held_b = _ports(a.split()[1]), _ports(b)
    assert len(held_a) == 7 and len(held_b) == 3 and not held_a & held_b and len(_ports(c)) == 4
    assert srun_lines(done.stderr) == ["srun: Job J step creation temporarily disabled, retrying (Required ports "
                                       "are in use)", "srun: Step created for job J"]


def _ports(text: str) -> set[int]:
    out: set[int] = set()
    for part in text.split(","):
        low, _, high = part.partition("-")
        out.update(range(int(low), int(high or low) + 1))
    return out


def _count(text: str) -> int:
    return len(_ports(text))


@pytest.mark.skipif(os.geteuid() != 0, reason="srun -Z is root's and SlurmUser's (the local cluster's SlurmUser is its "
                                              "owner: root when the tests run as root)")
def test_no_allocate_runs_on_the_named_nodes_without_a_job(cl: Cluster) -> None:
    bare = cl.run("srun", "-Z", "true")
    assert (bare.returncode, srun_lines(bare.stderr)) == (1, reference("capture2.txt", "srun -Z true"))
    before = len(cl.request("job_info", {"all_states": True})["jobs"])
    where = cl.run("srun", "-Z", "-w", "n1,n3", "printenv", "SLURMD_NODENAME", check=True)
    want = reference("capture2.txt", "srun -Z -w n1,n3 printenv SLURMD_NODENAME")
    assert sorted(where.stdout.split()) == sorted(line for line in want if not line.startswith("srun:"))
    assert srun_lines(where.stderr) == [line for line in want if line.startswith("srun:")]
    env = cl.run("srun", "-Z", "-w", "n2", "-n2", "env", check=True).stdout.splitlines()
    keep = ("SLURM_JOB_NODELIST=", "SLURM_NNODES=", "SLURM_NODELIST=", "SLURM_NTASKS=", "SLURM_PROCID=")
    want_env = reference("capture2.txt", 'srun -Z -w n2 -n2 env | grep -E "^SLURM_(JOB_ID|STEP_ID|NODELIST|NTASKS|'
                                         'JOB_NODELIST|NNODES|PROCID)=" | sort')
    assert sorted(line for line in env if line.startswith(keep)) == [line for line in want_env if line.startswith(keep)]
    assert len(cl.request("job_info", {"all_states": True})["jobs"]) == before  # (no job in the queue, none ended)
