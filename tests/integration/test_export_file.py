"""sbatch --export-file (issue 14) on real daemons, as 22.05.8 did on the anchor (its outputs in
the comments): the NUL-separated entries are the job's environment instead of sbatch's; a
newline separates nothing; --export's assignments apply over them; with --export=NONE the file
is not read; a descriptor from 3 up is read as the file."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from plurm.common import exportfile
from plurmtest import Cluster, command, start_cluster, wait_for


@pytest.fixture(scope="module")
def cl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = start_cluster(tmp_path_factory.mktemp("exportfile"), nodes=1, cpus=2, memory=1000)
    try:
        yield c
    finally:
        c.down()


SHOW = "printf '[%s][%s][%s][%s]' \"$EF_A\" \"$EF_B\" \"${EF_OUTER-unset}\" \"${PATH:+path}\""


def _batch(cl: Cluster, tmp_path: Path, name: str, *args: str, fds: tuple[int, ...] = ()) -> str:
    out = tmp_path / name
    done = subprocess.run(command("sbatch") + [*args, "-o", str(out), "--wrap", SHOW], capture_output=True,
                          text=True, env=dict(cl.env, EF_OUTER="outer"), cwd=tmp_path, pass_fds=fds, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    wait_for(lambda: out.exists() and out.read_text().endswith("]"))
    return out.read_text()


def test_the_file_is_the_jobs_environment(cl: Cluster, tmp_path: Path) -> None:
    defs = tmp_path / "defs"
    defs.write_bytes(b"EF_A=two\nlines\0EF_B=x=y\0not a definition\0")
    want = "[two\nlines][x=y][unset][path]"  # 22.05.8: [two\nlines][x][unset][path] (its file had EF_B=x)
    assert _batch(cl, tmp_path, "o1", f"--export-file={defs}") == want
    assert _batch(cl, tmp_path, "o2", "--export=ALL", f"--export-file={defs}") == want
    assert _batch(cl, tmp_path, "o3", "--export=EF_OUTER", f"--export-file={defs}") == want
    assert _batch(cl, tmp_path, "o4", "--export=EF_A=zz", f"--export-file={defs}") == "[zz][x=y][unset][path]"
    assert _batch(cl, tmp_path, "o5", "--export=NONE", f"--export-file={defs}") == "[][][unset][path]"


def test_newlines_separate_nothing_and_a_descriptor_is_read(cl: Cluster, tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.write(write_end, b"EF_A=l1\nEF_B=l2\n")
    os.close(write_end)
    try:
        got = _batch(cl, tmp_path, "o1", f"--export-file={read_end}", fds=(read_end,))
    finally:
        os.close(read_end)
    assert got == "[l1\nEF_B=l2\n][][unset][path]"  # 22.05.8's, from a file


def test_a_missing_file_is_refused(cl: Cluster, tmp_path: Path) -> None:
    done = cl.run("sbatch", f"--export-file={tmp_path}/none", "--wrap", "true", cwd=tmp_path)
    assert (done.returncode, done.stderr.strip()) == (  # 22.05.8's words
        1, f"sbatch: error: Could not open user environment file {tmp_path}/none")


def test_parse_keeps_only_definitions() -> None:
    assert exportfile.parse(b"A=1\x002BAD=x\x00=y\x00B_2=\x00A=3\x00") == {"A": "3", "B_2": ""}
    assert exportfile.parse(b"A=1\nstill A\x00B=2") == {"A": "1\nstill A", "B": "2"}
