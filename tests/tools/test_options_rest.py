"""The options whose effect needs hardware or services a site may lack (issue 14, item 8),
against the real Slurm 22.05: every vector of tests/tools/reference/options_rest/, captured on
the anchor by its capture_rest.py (README there), is run on plurm with the same command line, and
the exit code, the command's stderr, the job's variables (what its job printed) and the fields
of ``scontrol show job`` these options fill are compared.

One plurm cluster shaped as the real one (the CLI differential's ``like_real``: ClusterName
anchor, 4 nodes in partition debug); the real commands run as processes, as users run them.
KNOWN lists what may differ, each with its reason (an allowed part must still differ).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from plurmtest import Cluster, command

REF = Path(__file__).parent / "reference" / "options_rest"
sys.path[:0] = [str(Path(__file__).parent), str(REF)]
from test_cli_differential import like_real  # noqa: E402,F401  (the cluster shaped as the real one)
from capture_rest import command_line, show_fields  # noqa: E402  (the same command line on both sides)
from rest_vectors import BASE_ENV, FILES  # noqa: E402

CAPTURES = [json.loads(line) for line in (REF / "captures.jsonl").read_text().splitlines()]
JOB_ID = re.compile(r"(?:Submitted batch job |job allocation )(\d+)")

# id -> (the parts allowed to differ, why).  Parts: "rc", "stdout", "stderr", "output", "show".
KNOWN: dict[str, tuple[tuple[str, ...], str]] = {}


def normalise(text: str) -> str:
    text = re.sub(r"\b(Submitted batch job|job allocation) \d+", r"\1 <ID>", text)
    # salloc: a race in 22.05's salloc between its command's end and the controller's word
    return "".join(line for line in text.splitlines(keepends=True) if "has been revoked" not in line)


@pytest.fixture(scope="module")
def side(like_real: Cluster, tmp_path_factory: pytest.TempPathFactory) -> dict:  # noqa: F811
    cwd = tmp_path_factory.mktemp("optrest")
    for name, text in FILES.items():
        (cwd / name).write_text(text)
    env = dict(BASE_ENV, PATH=os.environ["PATH"], SLURM_CONF=str(like_real.conf))
    return {"cwd": cwd, "env": env}


def run_plurm(vec: dict, side: dict) -> dict:
    argv = command_line(vec)
    out_file = side["cwd"] / "job.out"
    out_file.unlink(missing_ok=True)
    proc = subprocess.run(command(argv[0]) + argv[1:], capture_output=True, text=True, env=side["env"],
                          cwd=side["cwd"], stdin=subprocess.DEVNULL, timeout=60)
    found = JOB_ID.search(proc.stdout + proc.stderr)
    show = None
    if found:
        shown = subprocess.run(command("scontrol") + ["show", "job", found.group(1)], capture_output=True,
                               text=True, env=side["env"], timeout=30)
        show = show_fields(shown.stdout)
        subprocess.run(command("scancel") + [found.group(1)], env=side["env"], timeout=30)
    output = out_file.read_text() if vec["cmd"] == "sbatch" and out_file.exists() else \
        (proc.stdout if vec["cmd"] != "sbatch" else "")
    return {"rc": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr, "output": output, "show": show}


# The default run (the test budget): one vector for each kind of behaviour (a job's variables,
# its shown fields, each refusal); the rest are slow.  test_options_rest_units.py holds every
# option's fields and lines without a cluster.
DEFAULT = {"sbatch-cpu-freq-range", "srun-cpu-freq-bad", "salloc-gpu-freq-bad", "salloc-network", "sbatch-container",
           "salloc-container", "sbatch-clusters-other", "sbatch-clusters-self", "sbatch-batch", "sbatch-reboot-held",
           "srun-x11", "sbatch-bb"}


@pytest.mark.parametrize("ref", [pytest.param(c, id=c["id"], marks=() if c["id"] in DEFAULT else pytest.mark.slow)
                                 for c in CAPTURES])
def test_vector(ref: dict, side: dict) -> None:
    got = run_plurm(ref, side)
    allowed, why = KNOWN.get(ref["id"], ((), ""))
    for part in ("rc", "stdout", "stderr", "output", "show"):
        mine, theirs = got[part], ref[part]
        if isinstance(mine, str):
            mine, theirs = normalise(mine), normalise(theirs)
        if part in allowed:
            assert mine != theirs, f"{ref['id']}: {part} now matches; drop it from KNOWN"
        else:
            assert mine == theirs, \
                f"{ref['id']} {part}: plurm {mine!r}, Slurm {theirs!r} ({' '.join(command_line(ref))})"


def test_srun_wait_ends_the_step_after_its_first_task(side: dict) -> None:
    """srun -W: 22.05.8's lines and exit (srun_wait.txt, case A: task 1 outlives --wait=2 after task 0)."""
    ref = (REF / "srun_wait.txt").read_text().split("== A\n", 1)[1].split("== B\n", 1)[0]
    want = [line for line in ref.splitlines() if line.startswith(("srun:", "slurmstepd"))]
    proc = subprocess.run(command("srun") + ["-N1", "-n2", "--wait=2", "sh", "-c",
                                             "if [ $SLURM_PROCID = 1 ]; then sleep 30; fi; echo done $SLURM_PROCID"],
                          capture_output=True, text=True, env=side["env"], cwd=side["cwd"], timeout=60)

    def norm(lines: list[str]) -> list[str]:
        out = [re.sub(r"\b\d+\.0\b", "J.0", line) for line in lines]
        out = [re.sub(r"\bn\d\b", "nX", line) for line in out]
        return [re.sub(r"CANCELLED AT \S+", "CANCELLED AT T", line) for line in out]

    assert norm(proc.stderr.splitlines()) == norm(want), proc.stderr
    assert proc.stdout == "done 0\n" and proc.returncode == int(ref.split("rc=")[1].split()[0]) == 137


@pytest.mark.parametrize("case", ["K", "K0"])
def test_srun_kill_on_bad_exit(side: dict, case: str) -> None:
    """srun -K: 22.05.8's lines and exit (srun_kill_on_bad_exit.txt): the bad task at once, the
    others Terminated, "Force Terminated", exit 143; -K0 waits for every task."""
    text = (REF / "srun_kill_on_bad_exit.txt").read_text()
    ref = text.split(f"== {case}\n", 1)[1].split("\n== ", 1)[0]
    want = [line for line in ref.splitlines() if line.startswith(("srun:", "slurmstepd"))]
    argv = {"K": ["-K", "sh", "-c", "if [ $SLURM_PROCID = 0 ]; then sleep 1; exit 3; fi; sleep 30"],
            "K0": ["--kill-on-bad-exit=0", "sh", "-c", "if [ $SLURM_PROCID = 0 ]; then exit 3; fi; sleep 2"]}[case]
    proc = subprocess.run(command("srun") + ["-N1", "-n2", *argv], capture_output=True, text=True, env=side["env"],
                          cwd=side["cwd"], timeout=60)

    def norm(lines: list[str]) -> list[str]:
        out = [re.sub(r"\b\d+\.0\b", "J.0", line) for line in lines]
        out = [re.sub(r"\bn\d\b", "nX", line) for line in out]
        return [re.sub(r"CANCELLED AT \S+", "CANCELLED AT T", line) for line in out]

    assert norm(proc.stderr.splitlines()) == norm(want), proc.stderr
    assert proc.returncode == int(ref.split("rc=")[1].split()[0])


def test_salloc_no_shell_leaves_the_allocation(side: dict) -> None:
    """salloc --no-shell (salloc_no_shell.txt): granted, exit 0, the job stays RUNNING, a command is not run."""
    proc = subprocess.run(command("salloc") + ["--no-shell", "-N1", "-J", "noshell2", "-t", "5", "echo", "hi"],
                          capture_output=True, text=True, env=side["env"], cwd=side["cwd"], timeout=60)
    found = re.fullmatch(r"salloc: Granted job allocation (\d+)\n", proc.stderr)
    assert found and proc.returncode == 0 and proc.stdout == "", proc.stderr
    shown = subprocess.run(command("squeue") + ["-h", "-j", found.group(1), "-o", "%T %j"], capture_output=True,
                           text=True, env=side["env"], timeout=30)
    subprocess.run(command("scancel") + [found.group(1)], env=side["env"], timeout=30)
    ref = (REF / "salloc_no_shell.txt").read_text().split("== NS-cmd\n", 1)[1].splitlines()
    assert shown.stdout.strip() == ref[2] == "RUNNING noshell2"


def test_srun_disable_status_forwards_the_first_ctrl_c(side: dict) -> None:
    """srun -X (srun_interrupt.txt): one Ctrl-C goes to the tasks at once, with 22.05.8's line."""
    import signal
    import time

    ref = (REF / "srun_interrupt.txt").read_text().split("== -X\n", 1)[1].split("\n== ", 1)[0].splitlines()
    proc = subprocess.Popen(command("srun") + ["-N1", "-n1", "-X", "sh", "-c",  # (a background sleep ignores SIGINT)
                                               'sleep 8 & p=$!; trap "echo got INT $SLURM_PROCID; kill $p; exit 5" INT;'
                                               ' wait'],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=side["env"],
                            cwd=side["cwd"])
    time.sleep(3)  # (the task has started: its trap is set)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert re.sub(r"\d+\.0", "J.0", err.splitlines()[0]) == re.sub(r"\d+\.0", "J.0", ref[0])  # sending Ctrl-C
    assert out == "got INT 0\n" and "task 0: Exited with exit code 5" in err
    assert proc.returncode == int(ref[-1].split("=")[1]) == 5


def test_srun_quit_on_interrupt_aborts_at_the_first_ctrl_c(side: dict) -> None:
    """srun --quit-on-interrupt (srun_quit_on_interrupt.txt): the first Ctrl-C ends the step,
    with 22.05.8's lines, and the tasks are reported (exit 5 here, the tasks' own)."""
    import signal
    import time

    ref = (REF / "srun_quit_on_interrupt.txt").read_text().splitlines()
    want = [line for line in ref if line.startswith(("srun:", "slurmstepd"))][:-1]  # (the task line: -n2 there)
    proc = subprocess.Popen(command("srun") + ["-N1", "-n1", "--quit-on-interrupt", "sh", "-c",
                                               'trap "echo got INT $SLURM_PROCID; exit 5" INT; sleep 8 & wait'],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=side["env"],
                            cwd=side["cwd"])
    time.sleep(3)  # (the task has started: its trap is set)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)

    def norm(lines: list[str]) -> list[str]:
        out = [re.sub(r"\b\d+\.0\b", "J.0", line) for line in lines]
        out = [re.sub(r"\bn\d\b", "nX", line) for line in out]
        return [re.sub(r"CANCELLED AT \S+", "CANCELLED AT T", line) for line in out]

    lines = err.splitlines()
    assert norm(lines[:-1]) == norm(want) and lines[-1].endswith(": task 0: Exited with exit code 5"), err
    assert out == "got INT 0\n" and proc.returncode == int(ref[-1].split("=")[1]) == 5


def test_salloc_bell_rings_on_its_terminal(side: dict) -> None:
    """salloc --bell: the bell on salloc's stdout when it is a terminal (salloc(1))."""
    import pty

    master, slave = pty.openpty()
    try:
        proc = subprocess.run(command("salloc") + ["--bell", "-N1", "true"], stdout=slave, stderr=subprocess.PIPE,
                              text=True, env=side["env"], cwd=side["cwd"], timeout=60)
        os.set_blocking(master, False)
        got = os.read(master, 1024)
    finally:
        os.close(slave)
        os.close(master)
    assert proc.returncode == 0 and got == b"\a", (got, proc.stderr)
