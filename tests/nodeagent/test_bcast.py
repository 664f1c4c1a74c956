"""nodeagent/bcast.py: --bcast's files written on the node by a process of the step's owner,
bounded before anything is written (a request that inflates past MAX_BYTES, a malformed one),
never through a link."""

from __future__ import annotations

import base64
import os
import shutil
import tempfile
import zlib
from pathlib import Path

import pytest

from plurm.nodeagent import bcast


def _spec(data: bytes, codec: str = "zlib", **more: object) -> dict:
    packed = zlib.compress(data) if codec == "zlib" else data
    return {"source": "/src/prog", "codec": codec, "mode": 0o751, "data": base64.b64encode(packed).decode(), **more}


def test_the_copy_and_its_libraries(tmp_path: Path) -> None:
    lib = base64.b64encode(zlib.compress(b"\x7fELF lib")).decode()
    spec = _spec(b"#!/bin/sh\necho hi\n", dir=str(tmp_path) + "/", send_libs=True, libs=[["libx.so.1", 0o644, lib]])
    target = bcast.destination(spec, 7, 2, "n1")
    assert target == f"{tmp_path}/slurm_bcast_7.2_n1"
    libs = bcast.install(spec, target, {})
    assert Path(target).read_bytes() == b"#!/bin/sh\necho hi\n"
    assert os.stat(target).st_mode & 0o7777 == 0o751
    assert libs == target + "_libs" and os.stat(libs).st_mode & 0o777 == 0o700
    assert (Path(libs) / "libx.so.1").read_bytes() == b"\x7fELF lib"


def test_a_bomb_and_a_malformed_request_write_nothing(tmp_path: Path) -> None:
    target = str(tmp_path / "copy")
    with pytest.raises(bcast.BcastError, match="File too large"):
        bcast.install(_spec(b"\0" * (bcast.MAX_BYTES + 1)), target, {})
    with pytest.raises(bcast.BcastError, match="Invalid argument"):
        bcast.install({"codec": "zlib", "data": "not base64!"}, target, {})
    with pytest.raises(bcast.BcastError, match="Invalid argument"):
        bcast.install(_spec(b"x", send_libs=True, libs=[["..", 0o644, ""]]), target, {})
    assert os.listdir(tmp_path) == []


def test_not_through_a_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (tmp_path / "copy").symlink_to(victim)
    with pytest.raises(bcast.BcastError, match="symbolic links"):
        bcast.install(_spec(b"evil"), str(tmp_path / "copy"), {})
    assert victim.read_text() == "keep"


def test_written_as_the_owner(test_users) -> None:
    from osusers import as_user

    user = test_users["plurmta"]
    reachable = Path(tempfile.mkdtemp(prefix="plurm-bcast-"))  # (pytest's tmp_path is root's alone)
    try:
        reachable.chmod(0o755)
        open_dir, closed_dir = reachable / "open", reachable / "closed"
        open_dir.mkdir()
        open_dir.chmod(0o777)
        closed_dir.mkdir(mode=0o755)
        kwargs = as_user(user)
        bcast.install(_spec(b"mine"), str(open_dir / "copy"), kwargs)
        assert os.stat(open_dir / "copy").st_uid == user.uid
        with pytest.raises(bcast.BcastError, match="Permission denied"):  # (root could have: the owner may not)
            bcast.install(_spec(b"mine"), str(closed_dir / "copy"), kwargs)
        assert not (closed_dir / "copy").exists()
    finally:
        shutil.rmtree(reachable, ignore_errors=True)
