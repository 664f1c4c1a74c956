"""srun --debugger-test on real daemons (issue 14), beside what the real Slurm 22.05.8 printed
(tests/integration/reference/srun-client/capture3.txt): the tasks start stopped before their
program runs, srun prints each one's pid and executable, then the step is cancelled and every
task reported Killed.  22.05's srun hangs after that (capture3b.txt: killed by timeout, rc 124);
plurm's ends with 137, as for any step whose tasks were killed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from plurmtest import Cluster, start_cluster

REF = Path(__file__).resolve().parent / "reference" / "srun-client"


@pytest.fixture(scope="module")
def cl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = start_cluster(tmp_path_factory.mktemp("srundebugger"), nodes=2, cpus=2, memory=1000)
    try:
        yield c
    finally:
        c.down()


def captured(command: str) -> list[str]:
    """What the anchor printed for ``command`` in capture3.txt (up to the next command or the
    file's end: 22.05 hung, its rc line is missing)."""
    lines = (REF / "capture3.txt").read_text().splitlines()
    start = lines.index(f"$ {command}") + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith(("$ ", "[rc="))), len(lines))
    return lines[start:end]


def shape(lines: list[str]) -> list[str]:
    """Lines with pids, job and step ids and clock times as P, J and T."""
    out = []
    for line in lines:
        line = re.sub(r"pid:\d+", "pid:P", line)
        line = re.sub(r"STEP \d+\.\d+", "STEP J", line)
        out.append(re.sub(r"\d{4}-\d\d-\d\dT[\d:]+", "T", line))
    return out


def test_debugger_test_prints_the_stopped_tasks_and_cancels_the_step(cl: Cluster, tmp_path: Path) -> None:
    done = cl.run("srun", "-N1", "--debugger-test", "sleep", "1", cwd=tmp_path)
    assert done.returncode == 137, done.stderr
    assert shape(done.stderr.splitlines()) == shape(captured("srun -N1 --debugger-test sleep 1"))


def test_the_program_never_runs_and_each_task_has_its_own_pid(cl: Cluster, tmp_path: Path) -> None:
    """The tasks are stopped before exec: a program that would leave a file leaves none."""
    marker = tmp_path / "ran"
    done = cl.run("srun", "-N2", "-n3", "--debugger-test", "sh", "-c", f"touch {marker}.$SLURM_PROCID",
                  cwd=tmp_path)
    assert done.returncode == 137, done.stderr
    table = [m.groups() for m in re.finditer(r"^srun: task:(\d+), host:(\w+), pid:(\d+), executable:(\S+)$",
                                             done.stderr, re.MULTILINE)]
    assert [(t, h, e) for t, h, _p, e in table] == [("0", "n1", "sh"), ("1", "n1", "sh"), ("2", "n2", "sh")]
    assert len({p for _t, _h, p, _e in table}) == 3
    assert sorted(line for line in done.stderr.splitlines() if line.endswith("Killed")) == [
        f"srun: error: {h}: task {t}: Killed" for t, h, _p, _e in table]
    assert not [p for p in os.listdir(tmp_path) if p.startswith("ran")]


def test_a_missing_program_is_said_as_without_the_option(cl: Cluster, tmp_path: Path) -> None:
    done = cl.run("srun", "-N1", "--debugger-test", "/nonexistent/prog", cwd=tmp_path)
    plain = cl.run("srun", "-N1", "/nonexistent/prog", cwd=tmp_path)
    assert "execve(): /nonexistent/prog: No such file or directory" in plain.stderr
    assert "execve(): /nonexistent/prog: No such file or directory" in done.stderr
    assert "srun: task:0, host:n1, pid:" in done.stderr  # (reported: it ended before it could stop)


def test_without_the_option_the_task_runs(cl: Cluster, tmp_path: Path) -> None:
    done = cl.run("srun", "-N1", "sh", "-c", f"touch {tmp_path}/ran", cwd=tmp_path)
    assert done.returncode == 0 and (tmp_path / "ran").exists(), done.stderr


def test_srun_keeps_only_a_nodes_own_well_formed_entries(capsys: pytest.CaptureFixture[str]) -> None:
    """A node's message is signed with the step's key, still checked: another node's ranks, a
    pid that is no positive integer, a missing executable are dropped (said), a second message
    from the same node and an unknown node are ignored, and the table waits for every node."""
    from plurm.tools.srun_debugger import ProcTable

    table = ProcTable(2)
    hosts, nodes = {0: "n1", 1: "n1", 2: "n2"}, {0: 0, 1: 0, 2: 1}
    assert not table.add(0, hosts, nodes, {"tasks": [
        {"task": 0, "pid": 11, "executable": "a"}, {"task": 2, "pid": 12, "executable": "b"},
        {"task": 1, "pid": True, "executable": "c"}, {"task": 1, "pid": -3, "executable": "c"},
        {"task": 1, "pid": 13}, "junk"]})
    assert not table.add(0, hosts, nodes, {"tasks": [{"task": 1, "pid": 14, "executable": "d"}]})
    assert not table.add(7, hosts, nodes, {"tasks": []})
    assert table.add(1, hosts, nodes, {"tasks": [{"task": 2, "pid": 15, "executable": "x" * 10000}]})
    assert table.lines() == ["srun: task:0, host:n1, pid:11, executable:a",
                             f"srun: task:2, host:n2, pid:15, executable:{'x' * 4096}"]
    assert capsys.readouterr().err.count("malformed task entry") == 4
