"""tools/srun_bcast.py: what srun --bcast packs, from its options and slurm.conf's
BcastParameters (DestDir=, Compression=, send_libs) and BcastExclude."""

from __future__ import annotations

import base64
import zlib
from pathlib import Path

import pytest

from plurm.tools import srun_bcast


def _conf(tmp_path: Path, text: str) -> str:
    path = tmp_path / "slurm.conf"
    path.write_text("ClusterName=c\nSlurmctldHost=h(127.0.0.1)\n" + text)
    return str(path)


def test_slurm_conf_gives_the_folder_the_codec_and_the_libraries(tmp_path: Path) -> None:
    conf = _conf(tmp_path, "BcastParameters=DestDir=/scratch,Compression=none,send_libs\nBcastExclude=NONE\n")
    notes: list[str] = []
    spec = srun_bcast.request({"bcast": True, "compress": True}, ["printenv", "X"], str(tmp_path), conf, notes)
    assert spec is not None and notes == []
    assert (spec["dir"], spec["codec"], spec["send_libs"]) == ("/scratch", "none", True)
    assert spec["source"].endswith("/printenv")
    assert base64.b64decode(spec["data"]) == Path(spec["source"]).read_bytes()
    assert "libc.so.6" in [name for name, _mode, _data in spec["libs"]]


def test_options_win_and_the_default_excludes_the_system_folders(tmp_path: Path) -> None:
    conf = _conf(tmp_path, "BcastParameters=DestDir=/scratch\n")
    spec = srun_bcast.request({"bcast": "copy", "send-libs": "yes"}, ["printenv"], str(tmp_path), conf, [])
    assert spec is not None and spec["path"] == f"{tmp_path}/copy" and spec["codec"] == "zlib"
    assert spec["libs"] == []  # (libc is in /lib: BcastExclude's default)
    assert zlib.decompress(base64.b64decode(spec["data"]))[:4] == b"\x7fELF"
    assert srun_bcast.request({"send-libs": "no"}, ["printenv"], str(tmp_path), conf, []) is None
    with pytest.raises(srun_bcast.BcastError) as caught:
        srun_bcast.request({"bcast": True, "send-libs": "maybe"}, ["printenv"], str(tmp_path), conf, [])
    assert (caught.value.code, caught.value.lines) == (255, ["srun: error: Invalid --send-libs specification"])
