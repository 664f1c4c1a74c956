"""sbatch --export-file (issue 14) on real daemons: NUL-separated definitions (a value with a
newline), one a line without NUL, from a descriptor, and with --export=NONE."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from plurmtest import Cluster, command, start_cluster, wait_for

from plurm.common import exportfile


@pytest.fixture(scope="module")
def cl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = start_cluster(tmp_path_factory.mktemp("exportfile"), nodes=1, cpus=2, memory=1000)
    try:
        yield c
    finally:
        c.down()


SHOW = "printf '[%s][%s][%s]' \"$EF_A\" \"$EF_B\" \"${EF_OUTER-unset}\""


def _output(path: Path) -> str:
    wait_for(lambda: path.exists() and path.read_text().endswith("]"))
    return path.read_text()


def test_nul_separated_file_with_export_none(cl: Cluster, tmp_path: Path) -> None:
    defs = tmp_path / "defs"
    defs.write_bytes(b"EF_A=two\nlines\0EF_B=x=y\0not a definition\0")
    out = tmp_path / "out"
    cl.sbatch("--export=NONE", f"--export-file={defs}", "-o", str(out), "--wrap", SHOW, cwd=tmp_path,
              env={"EF_OUTER": "outer"})
    assert _output(out) == "[two\nlines][x=y][unset]"


def test_lines_from_a_descriptor(cl: Cluster, tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.write(write_end, b"EF_A=first\nEF_B=second\n")
    os.close(write_end)
    out = tmp_path / "out"
    try:
        done = subprocess.run(command("sbatch") + [f"--export-file={read_end}", "-o", str(out), "--wrap", SHOW],
                              capture_output=True, text=True, env=dict(cl.env, EF_OUTER="outer"), cwd=tmp_path, pass_fds=(read_end,),
                              timeout=60)
    finally:
        os.close(read_end)
    assert done.returncode == 0, done.stderr
    assert _output(out) == "[first][second][outer]"


def test_a_missing_file_is_refused(cl: Cluster, tmp_path: Path) -> None:
    done = cl.run("sbatch", f"--export-file={tmp_path}/none", "--wrap", "true", cwd=tmp_path)
    assert (done.returncode, done.stderr.strip()) == (
        1, f"sbatch: error: --export-file={tmp_path}/none: No such file or directory")


def test_parse_keeps_only_definitions() -> None:
    assert exportfile.parse(b"A=1\n2BAD=x\n=y\nB_2=\nA=3\n") == {"A": "3", "B_2": ""}
    assert exportfile.parse(b"A=1\nstill A\0B=2") == {"A": "1\nstill A", "B": "2"}
