"""nodeagent/stepd_launch.py: srun's node-side options in plurmstepd, with real processes:
the task epilogs (srun's, then slurm.conf's TaskEpilog; bounded in time, with what they
started), the --slurmd-debug levels, and a hostile launch dict taken without a crash."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from plurm.nodeagent import launch, stepd_launch


def _options(tmp_path: Path, opts: dict, conf_epilog: str | None = None) -> tuple[stepd_launch.NodeOptions, list]:
    sent: list = []
    owner = launch.owner_of(os.getuid(), os.getgid(), {})
    msg = {"launch": opts, "task_ids": [3, 4], "job_id": 9, "step_id": 1, "node_id": 0, "work_dir": str(tmp_path),
           "environment": {"PATH": "/usr/bin:/bin"}, "argv": ["prog", "a"]}
    payload = {"owner": owner.to_payload(), "task_epilog": conf_epilog}
    return stepd_launch.NodeOptions(msg, payload, "n1", lambda kind, body: sent.append((kind, body))), sent


def _script(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def test_srun_epilog_then_task_epilog_in_the_tasks_environment(tmp_path: Path) -> None:
    mine = _script(tmp_path / "mine.sh", 'echo "srun $SLURM_PROCID $PWD" >> log\n')
    conf = _script(tmp_path / "conf.sh", 'echo "conf $SLURM_PROCID" >> log\n')
    opts, _sent = _options(tmp_path, {"task_epilog": mine}, conf)
    for rank in (3, 4):
        opts.task_env(rank, {"PATH": "/usr/bin:/bin", "SLURM_PROCID": str(rank)})
        opts.ended(rank, rank - 3, 12345, 0)
    assert (tmp_path / "log").read_text().splitlines() == [
        f"srun 3 {tmp_path}", "conf 3", f"srun 4 {tmp_path}", "conf 4"]


def test_an_epilog_that_hangs_is_killed_with_its_children(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stepd_launch, "EPILOG_TIMEOUT_S", 1.0)
    hang = _script(tmp_path / "hang.sh", "sleep 300 &\necho $! > child\nwait\n")
    opts, _sent = _options(tmp_path, {"task_epilog": hang})
    opts.task_env(3, {"PATH": "/usr/bin:/bin"})
    start = time.monotonic()
    opts.ended(3, 0, 12345, 0)
    assert time.monotonic() - start < 60
    child = int((tmp_path / "child").read_text())
    for _ in range(100):  # (killed; reaped by init once its parent is gone)
        try:
            with open(f"/proc/{child}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
        except FileNotFoundError:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the epilog's child {child} still runs")


def _said(sent: list) -> list[str]:
    return [body["data"].strip() for kind, body in sent if kind == "task_output"]


def test_slurmd_debug_levels(tmp_path: Path) -> None:
    quiet, sent = _options(tmp_path, {})
    quiet.begin()
    quiet.started(3, 0, 77)
    quiet.ended(3, 0, 77, -9)
    assert _said(sent) == []
    verbose, sent = _options(tmp_path, {"slurmd_debug": 2})
    verbose.begin()
    verbose.started(3, 0, 77)
    verbose.ended(3, 0, 77, -9)
    verbose.finish()
    said = _said(sent)
    assert said[0] == "slurmstepd-n1: debug levels are stderr='verbose', logfile='info', syslog='fatal'"
    assert said[1:2] == ["slurmstepd-n1: starting 2 tasks"] and said[-1] == "slurmstepd-n1: task 3 (77) exited. Killed by signal 9."
    assert not [line for line in said if "debug:" in line or "debug2:" in line]
    assert all(body["task"] == 3 for kind, body in sent)


def test_a_hostile_launch_dict_is_taken_without_a_crash(tmp_path: Path) -> None:
    opts, sent = _options(tmp_path, {"slurmd_debug": "9; rm -rf /", "multi_prog": "x", "task_prolog": 5,
                                     "task_epilog": ["/bin/false"], "bcast": {"dir": 3, "data": "!!"}})
    assert opts.begin() is False  # (the bcast cannot be written: no task starts, srun is told)
    assert [kind for kind, _ in sent] == ["srun_words", "task_exit", "task_exit", "node_done"]
    assert opts.task_argv(3, ["prog"]) is None and opts.user_prolog is None and opts.epilogs == []
