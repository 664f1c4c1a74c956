"""sbatch's own handling of the timeprio options (issue 14), against Slurm 22.05.8's captures
(tests/integration/reference/timeprio/): the errors sbatch gives before it asks the
controller, and the JobSpec fields the options become."""

from __future__ import annotations

from pathlib import Path

import pytest

from plurm.grammar.options import OptionError
from plurm.tools.jobspec import build_spec, not_acted_on
from plurm.tools.sbatch_cli import parse_sbatch

REFERENCE = Path(__file__).parents[1] / "integration" / "reference" / "timeprio"


def _reference(name: str) -> tuple[list[str], int]:
    """The error lines and exit status of a captured command."""
    lines = (REFERENCE / f"{name}.txt").read_text().splitlines()
    return [line for line in lines[1:-1]], int(lines[-1].removeprefix("rc="))


@pytest.mark.parametrize("name, argv", [
    ("priority_huge", ["--priority=99999999999"]),
    ("priority_max", ["--priority=4294967294"]),
    ("begin_after_deadline", ["--begin=now+2hours", "--deadline=now+1hour"]),
    ("nodefile_missing", ["-F", "/tmp/tp/nosuchfile"]),
])
def test_sbatch_refuses_as_slurm(name: str, argv: list[str]) -> None:
    with pytest.raises(OptionError) as refused:
        parse_sbatch(argv + ["-t", "1", "--wrap", "true"], {})
    assert (refused.value.lines, refused.value.exit_code) == _reference(name)


def test_the_options_become_fields_and_are_not_warned_about(tmp_path: Path) -> None:
    nodefile = tmp_path / "nodes"
    nodefile.write_text("n[2-3]\nn2\n")
    argv = ["--time-min=5", "--deadline=now+1hour", "--priority=TOP", "--prefer=fast", "--tmp=2G", "-O",
            "--spread-job", "--use-min-nodes", "-k", "-F", str(nodefile), "--wait-all-nodes=1", "--delay-boot=5"]
    req = parse_sbatch(argv + ["--wrap", "true"], {})
    spec = build_spec(req.options, default_name="wrap", environ={}, batch=True, script=req.script_text,
                      raw_options=req.raw_options)
    assert not_acted_on(spec) == []
    assert {k: spec[k] for k in ("time_min", "priority_top", "prefer", "tmp_disk", "overcommit", "spread_job",
                                 "use_min_nodes", "no_kill", "req_nodes", "wait_all_nodes", "delay_boot")} == {
        "time_min": 5, "priority_top": True, "prefer": "fast", "tmp_disk": 2048, "overcommit": True,
        "spread_job": True, "use_min_nodes": True, "no_kill": True, "req_nodes": ["n2", "n3"],
        "wait_all_nodes": 1, "delay_boot": 5}
    assert isinstance(spec["deadline"], float)
    # A --priority that is no number is ignored, as sbatch does (reference priority_abc).
    req = parse_sbatch(["--priority=abc", "--wrap", "true"], {})
    assert "priority" not in build_spec(req.options, default_name="wrap", environ={}, batch=True)


def test_scontrol_show_job_has_the_fields_where_slurm_has_them() -> None:
    from plurm.tools.showfmt import job_lines

    job = {"job_id": 5, "state": "PENDING", "time_limit": 10, "submit_time": 1796280000.0, "partition": "debug",
           "spec": {"name": "wrap", "prefer": "fast", "time_min": 2, "deadline": 1796286354.0, "delay_boot": 5,
                    "spread_job": True, "time_limit": 10}}
    ours = [line.strip() for line in job_lines(job, 1796280010.0)]
    held = [line.strip() for line in (REFERENCE / "show_job_held_options.txt").read_text().splitlines()]
    preferred = [line.strip() for line in (REFERENCE / "prefer_show_job.txt").read_text().splitlines()]
    assert "RunTime=00:00:00 TimeLimit=00:10:00 TimeMin=00:02:00" in ours and held[5].endswith("TimeMin=00:02:00")
    assert ours[8].startswith("StartTime=Unknown EndTime=Unknown Deadline=2026-12-0")  # (local time)
    assert held[8].startswith("StartTime=Unknown EndTime=Unknown Deadline=2026-")
    # Features with DelayBoot, then Prefer; SpreadJob right after Power.
    for reference, wanted in ((held, "Features=(null) DelayBoot=00:05:00"), (preferred, "Prefer=fast")):
        assert wanted in reference and wanted in ours
    assert ours[ours.index("Features=(null) DelayBoot=00:05:00") + 1] == "Prefer=fast"
    assert preferred[preferred.index("Prefer=fast") - 1].startswith("Features=(null) DelayBoot=")
    assert held[held.index("Power=") + 1] == ours[ours.index("Power=") + 1] == "SpreadJob=Yes"
