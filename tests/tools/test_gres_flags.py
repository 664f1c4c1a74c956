"""--gres-flags (issue 14, binding): sbatch's refusal, the JobSpec field and `scontrol show job`'s
GresEnforceBind line against Slurm 22.05.8's captures (tests/integration/reference/binding/);
what plurmd does with it is tests/nodeagent/test_stepbind.py's."""

from __future__ import annotations

from pathlib import Path

import pytest

from plurm.grammar.options import OptionError
from plurm.tools.jobspec import build_spec, not_acted_on
from plurm.tools.sbatch_cli import parse_sbatch
from plurm.tools.showfmt import job_lines

REFERENCE = Path(__file__).parents[1] / "integration" / "reference" / "binding"


def _spec(*argv: str) -> dict:
    req = parse_sbatch([*argv, "--gres=gpu:1", "--wrap", "true"], {})
    return build_spec(req.options, default_name="wrap", environ={}, batch=True, raw_options=req.raw_options)


def test_a_bad_value_is_refused_as_slurm_refuses_it() -> None:
    lines = (REFERENCE / "gres_flags_bogus.txt").read_text().splitlines()
    with pytest.raises(OptionError) as refused:
        parse_sbatch(["--gres-flags=bogus", "--wrap", "true"], {})
    assert (refused.value.lines, refused.value.exit_code) == (lines[:-1], int(lines[-1].removeprefix("rc=")))


@pytest.mark.parametrize("flag, capture", [("enforce-binding", "gres_flags_enforce_show_job.txt"),
                                           ("disable-binding", "gres_flags_disable_show_job.txt")])
def test_the_flag_is_kept_and_shown_where_slurm_shows_it(flag: str, capture: str) -> None:
    spec = _spec(f"--gres-flags={flag}", *(["--gpu-freq=high"] if flag == "enforce-binding" else []))
    assert spec["gres_flags"] == [flag] and not_acted_on(spec) == []
    job = {"job_id": 5, "state": "PENDING", "partition": "debug", "submit_time": 1796280000.0, "spec": spec}
    ours = [line.strip() for line in job_lines(job, 1796280010.0)]
    theirs = [line.strip() for line in (REFERENCE / capture).read_text().splitlines() if line.strip()]
    assert theirs[theirs.index("Power="):] == ours[ours.index("Power="):]
