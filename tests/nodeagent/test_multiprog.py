"""common/multiprog.py: srun --multi-prog's file, as srun checks it and each node reads it."""

from __future__ import annotations

import pytest

from plurm.common import multiprog


def _argv(text: str, ntasks: int, extra: list[str] = []) -> list[list[str] | None]:
    records = [r.to_wire() for r in multiprog.parse(text, "f.conf", ntasks)]
    return [multiprog.task_argv(records, rank, extra) for rank in range(ntasks)]


def test_ranks_offsets_quotes_and_the_rest() -> None:
    text = "# c\n\n4-6 hostname\n1,7 echo task:%t\n0,2-3 echo offset:%o\n"
    assert _argv(text, 8) == [["echo", "offset:0"], ["echo", "task:1"], ["echo", "offset:1"], ["echo", "offset:2"],
                              ["hostname"], ["hostname"], ["hostname"], ["echo", "task:7"]]
    assert _argv("0 echo 'a %t' b'c d'%t \"q\n* prog %o\n", 3, ["x"]) == [
        ["echo", "a %t", "bc d0", '"q', "x"], ["prog", "1", "x"], ["prog", "2", "x"]]


@pytest.mark.parametrize("text,lines", [
    ("0 a\n", ["Configuration file f.conf invalid, no record for task id 1"]),
    ("0-1 a\n0 b\n", ["Duplicate record for task 0", "Line 2 of configuration file f.conf invalid"]),
    ("0,x a\n", ["Invalid task range specification (0,x)", "Line 1 of configuration file f.conf invalid"]),
    ("0-2 a\n", ["Invalid task id, 2 >= ntasks", "Line 1 of configuration file f.conf invalid"]),
    ("* a\n0 b\n", ["Task range specification with asterisk must be last",
                    "Line 2 of configuration file f.conf invalid"]),
    ("0\n", ["Line 1 of configuration file f.conf invalid"]),
])
def test_22_05s_words_for_a_wrong_file(text: str, lines: list[str]) -> None:
    with pytest.raises(multiprog.MultiProgError) as caught:
        multiprog.parse(text, "f.conf", 2)
    assert caught.value.lines == lines


def test_malformed_records_name_no_task() -> None:
    assert multiprog.task_argv("x", 0, []) is None
    assert multiprog.task_argv([{"ranges": [[0, "a"]], "words": [["a", False]]}], 0, []) is None
    assert multiprog.task_argv([{"ranges": None, "words": [[[1, False]]]}], 0, []) is None
    assert multiprog.task_argv([{"ranges": None, "words": ["a"]}], 0, []) is None
