"""Typed value parsers: known answers (observed with sbatch 22.05.8), and properties -- every
parser returns JSON-serialisable values or raises only its typed error, on any input."""
from __future__ import annotations

import json
import random
import string
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plurm.grammar import structvalues as S, values as V
from plurm.grammar.options import PARSERS
from plurm.grammar.values import OptionError, OptionValueError


@pytest.mark.parametrize("text,minutes", [
    ("0", None), ("-1", None), ("UNLIMITED", None), ("infinite", None), ("00:00:00", None),
    ("-5", None), ("1:30", 2), ("1:2:3", 63), ("1-2", 1560), ("1-2:3", 1563),
    ("1-2:3:4", 1564), ("61", 61), ("90:30", 91), ("0:0:1", 1), ("0:1", 1), ("1-0", 1440),
    ("2-00:00", 2880), ("5:45:0", 345)])
def test_time(text: str, minutes: int | None) -> None:
    assert V.parse_time(text) == minutes


@pytest.mark.parametrize("text", ["1:0:0:0", "1::", "", "5.5", " 5", "5abc", "1-abc", "2:",
                                  ":5", "-1-0", "abc"])
def test_time_invalid(text: str) -> None:
    with pytest.raises(OptionValueError) as info:
        V.parse_time(text)
    assert info.value.text == "Invalid --time specification"
    assert info.value.exit_code == 255


def test_minutes_to_str() -> None:
    assert V.minutes_to_str(90) == "01:30:00"
    assert V.minutes_to_str(1564) == "1-02:04:00"
    assert V.minutes_to_str(None) == "UNLIMITED"


@pytest.mark.parametrize("text,mb", [
    ("96GB", 98304), ("96gb", 98304), ("100K", 1), ("1025K", 2), ("0", 0), ("0G", 0),
    ("10MB", 10), (" 10", 10), ("+10", 10), ("2T", 2097152), ("4000M", 4000), ("1900", 1900)])
def test_memory(text: str, mb: int) -> None:
    assert V.parse_memory(text) == mb


@pytest.mark.parametrize("text", ["1.5G", "1P", "10b", "-5", "5X", "xyz", ""])
def test_memory_invalid(text: str) -> None:
    with pytest.raises(OptionValueError, match="Invalid --mem specification"):
        V.parse_memory(text)


def test_mbytes_to_str() -> None:
    assert [V.mbytes_to_str(x) for x in (0, 1, 1024, 16384, 4000, 2097152)] == \
        ["0?", "1", "1G", "16G", "4000", "2T"]


@pytest.mark.parametrize("text,want", [("2", [2, 2]), ("2-4", [2, 4]), ("-4", [1, 4]),
                                       ("0-0", [0, 0]), ("1k", [1024, 1024])])
def test_nodes(text: str, want: list[int]) -> None:
    assert V.parse_nodes(text) == want


@pytest.mark.parametrize("text,msg", [
    ("2,4", '"2,4" is not a valid node count'), ("abc", '"abc" is not a valid node count'),
    ("3-2", "Maximum node count 2 is less than minimum node count 3"),
    ("2-", "Maximum node count -1 is less than minimum node count 2")])
def test_nodes_invalid(text: str, msg: str) -> None:
    with pytest.raises(OptionValueError) as info:
        V.parse_nodes(text)
    assert info.value.text == msg


def test_array() -> None:
    a = S.parse_array("1-5,10,20-30:5%3")
    assert a == {"indices": [1, 2, 3, 4, 5, 10, 20, 25, 30], "max_running": 3,
                 "spec": "1-5,10,20-30:5%3"}
    for bad in ("x-y", "0-5000", "5-1", "1-10:0", "1%", ""):
        with pytest.raises(OptionValueError) as info:
            S.parse_array(bad)
        assert info.value.exit_code == 1


def test_dependency() -> None:
    d = S.parse_dependency("afterok:5001:5002?afternotok:5003")
    assert d["combine"] == "any"
    assert [c["job_ids"] for c in d["conditions"]] == [["5001", "5002"], ["5003"]]
    assert S.parse_dependency("singleton")["conditions"][0]["type"] == "singleton"
    assert S.parse_dependency("afterany:12+30")["conditions"][0]["minutes"] == 30
    assert S.parse_dependency("aftercorr:7_3")["conditions"][0]["job_ids"] == ["7_3"]
    for bad in ("bogus", "afterok", "afterok:x", "afterok:1,afterany:2?afterok:3"):
        with pytest.raises(OptionValueError):
            S.parse_dependency(bad)


@pytest.mark.parametrize("text,sig,num,secs,b,r", [
    ("B:USR2", "USR2", 12, 60, True, False), ("USR1@120", "USR1", 10, 120, False, False),
    ("B:10@90", "USR1", 10, 90, True, False), ("RB:SIGUSR1@600", "USR1", 10, 600, True, True),
    ("usr1@0", "USR1", 10, 0, False, False), ("99", "99", 99, 60, False, False)])
def test_signal(text: str, sig: str, num: int, secs: int, b: bool, r: bool) -> None:
    assert S.parse_signal(text) == {"signal": sig, "number": num, "warn_seconds": secs,
                                    "batch_shell_only": b, "on_reservation_end": r}


@pytest.mark.parametrize("text", ["FOO", "B:USR1@abc", "0", "", "X:USR1"])
def test_signal_invalid(text: str) -> None:
    with pytest.raises(OptionValueError, match="Invalid --signal specification"):
        S.parse_signal(text)


def test_mail_type() -> None:
    assert S.parse_mail_type("all")["types"] == list(S.MAIL_ALL)
    assert S.parse_mail_type("start,end,fail,time_limit_80") == \
        {"types": ["END", "FAIL", "TIME_LIMIT_80"], "dropped": ["start"]}
    assert S.parse_mail_type("none")["types"] == []
    with pytest.raises(OptionValueError, match="Invalid --mail-type specification"):
        S.parse_mail_type("bogus")


def test_gres_and_gpus() -> None:
    assert S.parse_gres("gpu:1,tmpfs:100G") == [
        {"name": "gpu", "type": None, "count": 1},
        {"name": "tmpfs", "type": None, "count": 107374182400}]
    assert S.parse_gres("gpu:a100_3g.40gb:1")[0]["type"] == "a100_3g.40gb"
    assert S.parse_gres("gpu:1080:1")[0] == {"name": "gpu", "type": "1080", "count": 1}
    with pytest.raises(OptionValueError) as info:
        S.parse_gres("gpu:1,mps:50")
    assert (info.value.text, info.value.exit_code) == \
        ("Invalid generic resource (gres) specification", 1)
    assert S.parse_gpus("v100:2") == {"type": "v100", "count": 2}
    assert S.parse_gpus("3") == {"type": None, "count": 3}


def test_keywords() -> None:
    assert V.parse_exclusive(None) == "exclusive"
    assert V.parse_exclusive("USER") == "user"
    assert V.parse_open_mode("Tr") == "truncate"
    assert V.parse_distribution("block:cyclic:fcyclic,pack")
    assert V.parse_distribution("plane=4")
    assert S.parse_export("ALL,A=b") == {"mode": "ALL", "names": ["A"],
                                         "assignments": {"A": "b"}}
    assert V.parse_nice(None) == 100
    for fn, bad in ((V.parse_exclusive, "foo"), (V.parse_open_mode, "x"),
                    (V.parse_distribution, "foo"), (V.parse_hint, "foo"),
                    (V.parse_gres_flags, "foo"), (V.parse_zero_one, "2"),
                    (V.parse_cpu_freq, "foo"), (V.parse_mem_bind, "foo"),
                    (V.parse_gpu_bind, "foo"), (V.parse_yes_no, "foo"),
                    (V.parse_profile, "foo"), (V.parse_acctg_freq, "foo")):
        with pytest.raises(OptionValueError):
            fn(bad)


def test_begin_forms() -> None:
    now = time.mktime((2026, 11, 29, 12, 0, 0, 0, 0, -1))
    assert S.parse_begin("now+1hour", now=now) == int(now) + 3600
    assert S.parse_begin("now+6hours", now=now) == int(now) + 6 * 3600
    assert S.parse_begin("now+2days", now=now) == int(now) + 2 * 86400
    assert S.time_to_iso(S.parse_begin("16:00", now=now)) == "2026-11-29T16:00:00"
    assert S.time_to_iso(S.parse_begin("10:00", now=now)) == "2026-11-30T10:00:00"
    assert S.time_to_iso(S.parse_begin("tomorrow", now=now)) == "2026-11-30T00:00:00"
    assert S.time_to_iso(S.parse_begin("2030-01-15T09:00:00", now=now)) == \
        "2030-01-15T09:00:00"
    assert S.time_to_iso(S.parse_begin("2030-01-01T10:00", now=now)) == "2030-01-01T10:00:00"
    with pytest.raises(OptionValueError) as info:
        S.parse_begin("notatime")
    assert info.value.for_prog("sbatch").lines == [
        "Invalid time specification (pos=0): notatime",
        "sbatch: error: Invalid --begin specification"]


def test_hostlist() -> None:
    assert S.parse_hostlist("cn[01-03],x") == ["cn01", "cn02", "cn03", "x"]
    assert S.parse_hostlist("cn[10-12,15],cn20") == ["cn10", "cn11", "cn12", "cn15", "cn20"]
    with pytest.raises(OptionValueError):
        S.parse_hostlist("n[1-")


# ------------------------------------------------------------------------- properties
def _call(name: str, text: str) -> None:
    parser = PARSERS[name]
    try:
        out = parser(text, "opt")
    except OptionError:
        return
    json.dumps(out)


_TEXT = st.text(alphabet=string.printable + "ä€\u00a0", max_size=40)
_SHAPED = st.from_regex(r"[0-9a-zA-Z:,%@\-+*=_.?\[\] ]{0,24}", fullmatch=True)


@pytest.mark.parametrize("name", sorted(PARSERS))
@settings(max_examples=150, deadline=None)
@given(text=st.one_of(_TEXT, _SHAPED))
def test_parsers_raise_only_typed_errors(name: str, text: str) -> None:
    if name == "hostlist" and "/" in text:
        return  # a '/' means "read this file"; covered separately
    _call(name, text)


@settings(max_examples=300, deadline=None)
@given(minutes=st.integers(min_value=1, max_value=10 ** 7))
def test_time_round_trip(minutes: int) -> None:
    assert V.parse_time(V.minutes_to_str(minutes)) == minutes


@settings(max_examples=300, deadline=None)
@given(mb=st.integers(min_value=0, max_value=2 ** 30 - 1))  # 1P and up: sbatch prints P
def test_memory_round_trip(mb: int) -> None:
    shown = V.mbytes_to_str(mb)
    assert V.parse_memory(shown.rstrip("?")) == mb


@settings(max_examples=200, deadline=None)
@given(lo=st.integers(0, 500), width=st.integers(0, 400), step=st.integers(1, 50))
def test_array_range_step(lo: int, width: int, step: int) -> None:
    hi = min(lo + width, 1000)
    got = S.parse_array(f"{lo}-{hi}:{step}")["indices"]
    assert got == list(range(lo, hi + 1, step))


@pytest.mark.slow
def test_fuzz_value_parsers() -> None:
    """100,000 random inputs, each through every value parser: only OptionError escapes."""
    rnd = random.Random(20261129)
    alphabet = string.digits * 3 + ":-,%@+*=_.?[]/ " + "kKmMgGtTbBRBhdsw" + string.ascii_letters
    seeds = ["1-2:3:4", "96GB", "2-6", "1-5,10,20-30:5%3", "afterok:1:2?afterany:3",
             "RB:SIGUSR1@600", "ALL,A=b", "gpu:a100:2,tmpfs:10G", "v100:2", "END,FAIL,all",
             "now+1hour", "2030-01-15T09:00:00", "block:cyclic,pack", "cn[01-04],x",
             "task=30", "high-low:ondemand", "map_gpu:0,1", "1@10:00"]
    names = [n for n in sorted(PARSERS) if n != "hostlist"]
    count = 0
    deadline = time.monotonic() + 110
    while count < 100_000 and time.monotonic() < deadline:
        if rnd.random() < 0.5:
            s = list(rnd.choice(seeds))
            for _ in range(rnd.randint(1, 3)):
                op = rnd.randint(0, 2)
                pos = rnd.randint(0, len(s))
                if op == 0:
                    s.insert(pos, rnd.choice(alphabet))
                elif s and op == 1:
                    del s[min(pos, len(s) - 1)]
                elif s:
                    s[min(pos, len(s) - 1)] = rnd.choice(alphabet)
            text = "".join(s)
        else:
            text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 16)))
        for name in names:
            _call(name, text)
        if "/" not in text:
            _call("hostlist", text)
        count += 1   # one input, through every parser
    assert count >= 100_000
