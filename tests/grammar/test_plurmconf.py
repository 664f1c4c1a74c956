"""plurm.conf, plurm's own Key=Value file beside slurm.conf: read as slurm.conf is."""

from __future__ import annotations

import pytest

from plurm.grammar.plurmconf import ConfError, plurm_conf_path, read_plurm_conf


def test_a_missing_file_is_an_empty_one(tmp_path):
    conf = read_plurm_conf(tmp_path / "plurm.conf")
    assert list(conf) == [] and conf.get("FreezePolicy") is None and "FreezePolicy" not in conf
    assert str(conf.error("FreezePolicy", "wrong")) == f"{tmp_path / 'plurm.conf'}:0: wrong"


def test_keys_are_case_insensitive_the_last_one_wins_and_lines_are_kept(tmp_path):
    path = tmp_path / "plurm.conf"
    path.write_text("# comment\nfreezepolicy=memory   FreezeMemoryFor=10\n\\\nFreezeMemoryFor=20 # again\n")
    conf = read_plurm_conf(path)
    assert conf.get("FREEZEPOLICY") == "memory" and conf.get("FreezeMemoryFor") == "20"
    assert [(s.key, s.value, s.loc.line) for s in conf] == [("freezepolicy", "memory", 2),
                                                           ("FreezeMemoryFor", "20", 3)]
    assert str(conf.error("FreezeMemoryFor", "bad")) == f"{path}:3: bad"


def test_a_syntax_error_names_file_and_line(tmp_path):
    path = tmp_path / "plurm.conf"
    path.write_text("FreezePolicy=memory\nFreezeMemoryFor\n")
    with pytest.raises(ConfError, match=rf"^{path}:2: expected Key=Value"):
        read_plurm_conf(path)


def test_it_lives_beside_slurm_conf(tmp_path):
    assert plurm_conf_path(tmp_path / "etc" / "slurm.conf") == str(tmp_path / "etc" / "plurm.conf")
