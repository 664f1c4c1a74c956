"""Hostlists: expansion and compression as Slurm's scontrol does them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plurm.grammar import hostlist as hl
from plurm.grammar.hostlist import HostlistError, compress, expand

GRAMMAR = Path(hl.__file__).with_name("hostlist.lark")


# ------------------------------------------------------------------ expand

@pytest.mark.parametrize(
    "text, names",
    [
        ("n[1-3,7],gpu[01-02]", ["n1", "n2", "n3", "n7", "gpu01", "gpu02"]),
        ("r[1-2]n[1-2]", ["r1n1", "r1n2", "r2n1", "r2n2"]),
        ("n[001-003]", ["n001", "n002", "n003"]),
        ("n[1-2]-ib", ["n1-ib", "n2-ib"]),
        ("n[1-2]-ib,m[3]x", ["n1-ib", "n2-ib", "m3x"]),
        ("a,n[1-2],b", ["a", "n1", "n2", "b"]),
        ("n1 n2\tn3", ["n1", "n2", "n3"]),
        ("a,,b,", ["a", "b"]),
        ("", []),
        (",", []),
        ("[1-3]", ["1", "2", "3"]),
        ("n[5]", ["n5"]),
        ("n[05]", ["n05"]),
        ("n[1-3,2]", ["n1", "n2", "n3", "n2"]),  # duplicates kept, like scontrol
        ("n[1-010]", [f"n{i}" for i in range(1, 11)]),  # width of the first number
        ("n[08-11]", ["n08", "n09", "n10", "n11"]),
        ("n[98-100]", ["n98", "n99", "n100"]),
        ("n[0001-2]", ["n0001", "n0002"]),
        ("n[1-2][3-4]", ["n13", "n14", "n23", "n24"]),
        ("n-[1-2]", ["n-1", "n-2"]),
        ("n[0-0]", ["n0"]),
        # Slurm's order for three or more groups (checked against scontrol show hostnames).
        ("a[1-2]b[1-2]c[1-2]",
         ["a1b1c1", "a1b1c2", "a2b1c1", "a2b1c2", "a1b2c1", "a1b2c2", "a2b2c1", "a2b2c2"]),
        ("a[1-2]b[3-4]c[5-6]d[7-8]",
         ["a1b3c5d7", "a1b3c5d8", "a2b3c5d7", "a2b3c5d8", "a1b4c5d7", "a1b4c5d8", "a2b4c5d7",
          "a2b4c5d8", "a1b3c6d7", "a1b3c6d8", "a2b3c6d7", "a2b3c6d8", "a1b4c6d7", "a1b4c6d8",
          "a2b4c6d7", "a2b4c6d8"]),
    ],
)
def test_expand(text: str, names: list[str]) -> None:
    assert expand(text) == names
    assert hl.count(text) == len(names)
    assert list(hl.iter_expand(text)) == names


def test_expand_max_range() -> None:
    assert len(expand("n[1-65536]")) == 65536
    with pytest.raises(HostlistError, match="too many hosts"):
        expand("n[1-65537]")
    with pytest.raises(HostlistError, match="limit"):
        expand("a[0-65535]b[0-65535]")


@pytest.mark.parametrize(
    "text, message",
    [
        ("n[1-", "unclosed"),
        ("n[1-3", "unclosed"),
        ("n[3-1]", "end before start"),
        ("n[a-b]", "invalid range 'a-b'"),
        ("n[]", "invalid range ''"),
        ("n[1,]", "invalid range ''"),
        ("n[,1]", "invalid range ''"),
        ("n[1--2]", "invalid range"),
        ("n[1-2-3]", "invalid range"),
        ("n[-1]", "invalid range"),
        ("n[ 1-2]", "invalid range"),
        ("n[1-2 ]", "invalid range"),
        ("n]", "unbalanced"),
        ("n[1-2]]", "unbalanced"),
        ("n[[1]]", "nested"),
        ("n[1[2]]", "nested"),
    ],
)
def test_expand_invalid(text: str, message: str) -> None:
    with pytest.raises(HostlistError, match=message) as info:
        expand(text)
    assert isinstance(info.value, ValueError)
    assert text in str(info.value)


def test_long_numbers() -> None:
    big = "1" * 5000  # beyond Python's int/str conversion limit
    with pytest.raises(HostlistError, match="number too long"):
        expand(f"n[{big}]")
    assert expand(f"n{big}") == [f"n{big}"]
    assert compress([f"n{big}", "n2"], sort=True) == f"n2,n{big}"


def test_expand_not_a_string() -> None:
    with pytest.raises(HostlistError):
        expand(None)  # type: ignore[arg-type]


# ------------------------------------------------------------------ compress

@pytest.mark.parametrize(
    "names, unsorted, sorted_",
    [
        # All checked against scontrol show hostlist / hostlistsorted (22.05).
        ("n1,n2,n3,n7", "n[1-3,7]", "n[1-3,7]"),
        ("n3,n2,n1", "n[3,2,1]", "n[1-3]"),
        ("n01,n2", "n[01,2]", "n[2,01]"),
        ("n9,n10,n11", "n[9-11]", "n[9-11]"),
        ("n09,n10", "n[09-10]", "n[09-10]"),
        ("n9,n010", "n[9,010]", "n[9,010]"),
        ("a,n1,b,n2", "a,n1,b,n2", "a,b,n[1-2]"),
        ("r10n1,r2n1,r1n1", "r10n1,r2n1,r1n1", "r1n1,r2n1,r10n1"),
        ("rack10,rack2,Rack1,rack1", "rack[10,2],Rack1,rack1", "Rack1,rack[1-2,10]"),
        ("n1-ib,n2-ib", "n1-ib,n2-ib", "n1-ib,n2-ib"),
        ("n0,n00,n000,n1", "n[0,00,000,1]", "n[0-1,00,000]"),
        ("n100,n099,n98", "n[100,099,98]", "n[98,099-100]"),
        ("n10,n01,n9,n1,n001,n100", "n[10,01,9,1,001,100]", "n[1,9,01,10,001,100]"),
        ("N1,n1,_1,-1,1", "N1,n1,_1,-1,1", "1,-1,N1,_1,n1"),
        ("1,2,3", "[1-3]", "[1-3]"),
        ("n1,n2,n01,n02", "n[1-2,01-02]", "n[1-2,01-02]"),
        ("a1b2,a1b3", "a1b[2-3]", "a1b[2-3]"),
        ("n2,n1,n", "n[2,1],n", "n,n[1-2]"),
        # sort=True drops duplicates (scontrol's hostlistsorted keeps them).
        ("n1,n2,n1,n2", "n[1-2,1-2]", "n[1-2]"),
        ("x,y,x", "x,y,x", "x,y"),
    ],
)
def test_compress(names: str, unsorted: str, sorted_: str) -> None:
    assert compress(names.split(","), sort=False) == unsorted
    assert compress(names.split(","), sort=True) == sorted_
    assert compress(names.split(",")) == sorted_  # sorting is the default


def test_compress_empty_and_generator() -> None:
    assert compress([]) == ""
    assert compress(f"n{i}" for i in range(1, 5)) == "n[1-4]"


@pytest.mark.parametrize("bad", ["", "n[1", "n]", "a,b", "a b", None, 3])
def test_compress_invalid_name(bad: object) -> None:
    with pytest.raises(HostlistError):
        compress(["n1", bad])  # type: ignore[list-item]


# ------------------------------------------------------------------ properties

_prefixes = st.sampled_from(["n", "gpu", "r1n", "rack-", "", "N", "a.b"])
_hosts = st.builds(
    lambda p, v, w: p + str(v).zfill(w) if w >= 0 else p,
    _prefixes, st.integers(0, 120), st.integers(-1, 4),
).filter(bool)


@given(st.lists(_hosts, max_size=40))
def test_compress_roundtrip_names(names: list[str]) -> None:
    assert expand(compress(names, sort=False)) == names
    assert expand(compress(names)) == hl.sort_hosts(names)  # sorted, unique
    assert compress(hl.sort_hosts(names), sort=False) == compress(names)


def _group_text() -> st.SearchStrategy[str]:
    def one(lo: int, n: int, w: int) -> str:
        lo_s = str(lo).zfill(w)
        return lo_s if n == 0 else f"{lo_s}-{lo + n}"
    rng = st.builds(one, st.integers(0, 200), st.integers(0, 5), st.integers(0, 3))
    return st.lists(rng, min_size=1, max_size=3).map(lambda r: "[" + ",".join(r) + "]")


_items = st.lists(st.one_of(st.sampled_from(["n", "gpu", "x-", "ib", "r", "7"]), _group_text()),
                  min_size=1, max_size=3).map("".join)


@given(st.lists(_items, max_size=4).map(",".join))
def test_compress_expand_reexpands(text: str) -> None:
    names = expand(text)
    assert expand(compress(names, sort=False)) == names
    assert expand(compress(names)) == hl.sort_hosts(names)


@given(st.text(alphabet="n0123-[],x \t", max_size=30))
def test_expand_only_hostlist_errors(text: str) -> None:
    try:
        expand(text)
    except HostlistError:
        pass


@given(st.text(max_size=30))
def test_expand_any_text_only_hostlist_errors(text: str) -> None:
    try:
        names = expand(text)
    except HostlistError:
        return
    assert all(names)


# ------------------------------------------------------------------ grammar agreement

@pytest.fixture(scope="module")
def lark_parser():  # type: ignore[no-untyped-def]
    lark = pytest.importorskip("lark")
    return lark.Lark(GRAMMAR.read_text(), parser="lalr")


def _tree_items(tree) -> list[list]:  # type: ignore[no-untyped-def]
    """The grammar's parse tree in hostlist.parse()'s shape (semantic checks left out)."""
    items = []
    for item in tree.children:
        parts: list = [""]
        for child in item.children:
            if getattr(child, "type", None) == "TEXT":
                parts[-1] += str(child)
            else:
                group = []
                for rng in child.children:
                    lo_s = str(rng.children[0])
                    hi = int(rng.children[-1])
                    group.append((int(lo_s), hi, len(lo_s)))
                parts += [group, ""]
        items.append(parts)
    return items


def _semantic_ok(items: list[list]) -> bool:
    return all(lo <= hi and hi - lo < hl.MAX_RANGE
               for item in items for group in item[1::2] for lo, hi, _ in group)


@settings(max_examples=400)
@given(st.one_of(
    st.text(alphabet="n01-[], \t", max_size=25),
    st.lists(_items, max_size=4).map(",".join),
))
def test_grammar_and_tokenizer_agree(lark_parser, text: str) -> None:  # type: ignore[no-untyped-def]
    from lark.exceptions import LarkError

    try:
        tree_items = _tree_items(lark_parser.parse(text))
    except LarkError:
        tree_items = None
    try:
        items = hl.parse(text)
    except HostlistError:
        items = None
    if tree_items is None or not _semantic_ok(tree_items):
        assert items is None or tree_items is not None and not _semantic_ok(tree_items)
        if tree_items is not None:
            with pytest.raises(HostlistError):
                expand(text)
        return
    assert items == tree_items


def test_grammar_examples(lark_parser) -> None:  # type: ignore[no-untyped-def]
    for text in ["n[1-3,7],gpu[01-02]", "r[1-2]n[1-2]-ib", " a ,, b ", ""]:
        assert _tree_items(lark_parser.parse(text)) == hl.parse(text)


# ------------------------------------------------------------------ start-up budget

def test_import_does_not_load_lark() -> None:
    code = ("import sys, plurm.grammar.hostlist as h; "
            "print(','.join(m for m in ('lark', 'typing', 'dataclasses') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.returncode == 0, out.stderr
    assert "lark" not in out.stdout


# ------------------------------------------------------------------ real Slurm

_COMPAT_EXPAND = ["n[1-3,7],gpu[01-02]", "r[1-2]n[1-2]", "a[1-3]b[1-2]c[1-2]", "n[08-100]",
                  "n[1-010]", "a,,b", "n[1-3,2]", "[1-3]", "n1 n2"]
_COMPAT_COMPRESS = ["n1,n2,n3,n7", "n3,n2,n1", "n01,n2", "n9,n10,n11", "n0,n00,n000,n1",
                    "n100,n099,n98", "rack10,rack2,Rack1,rack1", "N1,n1,_1,-1,1"]


# plurm installs its own `scontrol`; the real one is Debian's (or $SLURM_SCONTROL).
_SCONTROL = os.environ.get("SLURM_SCONTROL", "/usr/bin/scontrol")


@pytest.mark.compat
@pytest.mark.skipif(not os.access(_SCONTROL, os.X_OK), reason="needs Slurm's scontrol")
def test_against_scontrol() -> None:
    def sc(*args: str) -> str:
        return subprocess.run([_SCONTROL, "show", *args], capture_output=True, text=True,
                              check=True).stdout.strip()
    for text in _COMPAT_EXPAND:
        assert expand(text) == sc("hostnames", text).split(), text
    for names in _COMPAT_COMPRESS:
        assert compress(names.split(","), sort=False) == sc("hostlist", names), names
        assert compress(names.split(","), sort=True) == sc("hostlistsorted", names), names
