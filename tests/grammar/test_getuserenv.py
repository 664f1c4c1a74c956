"""--get-user-env[=timeout][L|S] on sbatch and salloc takes the values 22.05.8 takes (observed on
the anchor's sbatch and salloc, grammar/getuserenv.py): accepted ones reach the controller
(here: none listens, so the connect failure), others get 22.05.8's line and exit 255."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from plurm.grammar.getuserenv import parse_get_user_env
from plurm.grammar.values import OptionValueError
from plurmtest import command

ACCEPTED = ["", "10", "10L", "10s", "-1", "+5", " 5", "5LS", "L", "S"]
REFUSED = ["x", "10X", "+", "5 L"]


def _run(prog: str, arg: str, home: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    args = ["--wrap", "true"] if prog == "sbatch" else ["true"]
    full = dict(os.environ, PLURM_HOME=str(home), **(env or {}))
    return subprocess.run(command(prog) + ([arg] if arg else []) + args, check=False, capture_output=True, text=True,
                          env=full, timeout=60)


@pytest.mark.parametrize("value", ACCEPTED)
def test_the_values_22_05_takes(value: str) -> None:
    assert parse_get_user_env(value) == value


@pytest.mark.parametrize("value", REFUSED)
def test_the_values_22_05_refuses(value: str) -> None:
    with pytest.raises(OptionValueError, match="Invalid --get-user-env specification"):
        parse_get_user_env(value)


@pytest.mark.parametrize("prog", ["sbatch", "salloc"])
def test_the_commands_take_and_refuse_as_22_05(prog: str, tmp_path: Path) -> None:
    for arg in ("--get-user-env", "--get-user-env=10L"):
        done = _run(prog, arg, tmp_path)
        assert done.returncode == 1 and "Unable to contact slurm controller" in done.stderr, (arg, done.stderr)
    done = _run(prog, "--get-user-env=10X", tmp_path)
    assert (done.returncode, done.stderr.splitlines()[0]) == (255, f"{prog}: error: Invalid --get-user-env specification")


def test_sbatch_reads_sbatch_get_user_env_the_same_way(tmp_path: Path) -> None:
    assert _run("sbatch", "", tmp_path, {"SBATCH_GET_USER_ENV": "30S"}).returncode == 1
    assert _run("sbatch", "", tmp_path, {"SBATCH_GET_USER_ENV": "x"}).returncode == 255
