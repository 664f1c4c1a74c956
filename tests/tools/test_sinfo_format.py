"""sinfo's output, formatted from node and partition dicts, compared byte for byte with Slurm 22.05's."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from plurm.tools import sinfo, sinfofmt

REF = Path(__file__).resolve().parents[3] / "shared" / "reference" / "slurm-22.05"
if not REF.is_dir():
    REF = Path("/work/shared/reference/slurm-22.05")

NOW = time.mktime((2026, 11, 29, 15, 45, 16, 0, 0, -1))
IDLE_NOW = time.mktime((2026, 11, 29, 15, 44, 33, 0, 0, -1))
DRAIN_TIME = time.mktime((2026, 11, 29, 15, 44, 41, 0, 0, -1))


def ref(name: str) -> str:
    return (REF / f"{name}.txt").read_text()


def node(name, state="IDLE", alloc=0, free_mem=23828, **kw):
    rec = {"name": name, "cpus": 4, "cores_per_socket": 4, "real_memory": 2800, "gres": ["gpu:4"],
           "partitions": ["debug"], "responding": True, "state": state, "free_mem": free_mem,
           "boot_time": NOW - 100}
    if alloc:
        rec["alloc_cpus"] = alloc
    rec.update(kw)
    return rec


def partitions():
    return [{"name": "debug", "nodes": [f"n{i}" for i in range(1, 9)], "default": True}]


def busy_nodes():
    return [
        node("n1", "ALLOCATED", 4, 23829), node("n2", "ALLOCATED", 4, 23829),
        node("n3", "MIXED", 2, 23828), node("n4", "MIXED", 2, 23829),
        node("n5"), node("n6"), node("n7"),
        node("n8", "IDLE+DRAIN", free_mem=23827, drain=True, reason="anchor drain test",
             reason_user="root", reason_time=DRAIN_TIME),
    ]


def idle_nodes():
    return [node(f"n{i}") for i in range(1, 9)]


def run(argv, nodes, parts=None, now=NOW):
    opts = sinfo.parse_args(argv, environ={})
    return sinfofmt.format_sinfo(nodes, partitions() if parts is None else parts, opts,
                                 sinfofmt.Context(now, environ={}))


@pytest.mark.parametrize("name, argv", [
    ("busy_sinfo", []),
    ("busy_sinfo_N", ["-N"]),
    ("busy_sinfo_l", ["-l"]),
    ("busy_sinfo_N_l", ["-N", "-l"]),
    ("busy_sinfo_s", ["-s"]),
    ("busy_sinfo_R", ["-R"]),
    ("busy_sinfo_gres", ["-o", "%N %G %C %m %e %T"]),
])
def test_busy_cluster(name, argv):
    assert run(argv, busy_nodes()) == ref(name)


def test_idle_cluster():
    assert run([], idle_nodes()) == ref("idle_sinfo")
    assert run([], idle_nodes()) == ref("final_sinfo")
    assert run(["-N", "-l"], idle_nodes(), now=IDLE_NOW) == ref("idle_sinfo_N_l")


def test_unknown_partition_prints_header_only():
    # The controller answers no partition for -p nosuch.
    assert run(["-p", "nosuch"], idle_nodes(), parts=[]) == ref("err_sinfo_unknown_partition")


def test_help_and_version(capsys):
    with pytest.raises(sinfo.Usage) as info:
        sinfo.parse_args(["--help"], environ={})
    assert info.value.text == ref("help_sinfo") and info.value.code == 0
    with pytest.raises(sinfo.Usage) as info:  # upstream's line (test_point10_version.py), not Debian's
        sinfo.parse_args(["-V"], environ={})
    assert info.value.code == 0 and capsys.readouterr().out == ref("version_squeue").replace("slurm-wlm ", "slurm ")


def test_states_filter_and_down_nodes():
    nodes = busy_nodes()
    nodes[4] = node("n5", "DOWN*", responding=False)
    out = run(["-h", "-t", "idle,down"], nodes)
    assert out == ("debug*       up   infinite      1  down* n5\n"
                   "debug*       up   infinite      2   idle n[6-7]\n")
    assert run(["-h", "-t", "drain"], nodes) == "debug*       up   infinite      1  drain n8\n"
    assert run(["-h", "-d", "-o", "%N %T"], nodes) == "n5 down*\n"
    assert run(["-h", "-n", "n[1-3]", "-o", "%N %t %D"], nodes) == "n3 mix 1\nn[1-2] alloc 2\n"
    with pytest.raises(sinfo.Usage):
        sinfo.parse_args(["-t", "bogus"], environ={})


def test_draining_and_partitions():
    nodes = busy_nodes()
    nodes[0] = node("n1", "ALLOCATED+DRAIN", 4, drain=True, reason="maint")
    parts = partitions() + [{"name": "verylongpartition", "nodes": ["n[5-6]"], "max_time": 90,
                             "max_nodes": 2}]
    out = run(["-h", "-o", "%P|%a|%l|%s|%t|%T|%N|%E"], nodes, parts)
    lines = out.splitlines()
    assert lines[0] == "debug*|up|infinite|1-infinite|drng|draining|n1|maint"
    assert lines[-1] == "verylongpartition|up|1:30:00|1-2|idle|idle|n[5-6]|none"
    default = run([], nodes, parts).splitlines()
    assert default[0] == "PARTITION         AVAIL  TIMELIMIT  NODES  STATE NODELIST"
    assert default[-1] == "verylongpartition    up    1:30:00      2   idle n[5-6]"


def test_long_format_O():
    out = run(["-O", "NodeList:10,CPUs:.5,StateLong"], busy_nodes()[:1],
              parts=[{"name": "debug", "nodes": ["n1"], "default": True}])
    assert out == "NODELIST   CPUSSTATE               \nn1            4allocated           \n"


def test_option_errors():
    with pytest.raises(sinfo.Usage) as info:
        sinfo.parse_args(["-Z"], environ={})
    assert info.value.text == "sinfo: invalid option -- 'Z'\nTry \"sinfo --help\" for more information\n"
    with pytest.raises(sinfo.Usage):
        sinfo.parse_args(["-a", "-p", "debug"], environ={})


def test_a_partition_without_matching_nodes():
    """22.05 prints a partition none of whose nodes pass the filters as a line of zeros and
    n/a when the format names the partition (the real sinfo -t down, all nodes up, with
    this format), and no line when it does not (-o %N, -o %a)."""
    from plurm.tools.sinfo_records import Options
    from plurm.tools.sinfofmt import Context, format_sinfo

    nodes = [{"name": "n1", "state": "IDLE", "cpus": 4}]
    parts = [{"name": "debug", "default": True, "nodes": "n1", "state": "UP", "max_time": None}]
    opts = Options()
    opts.states, opts.noheader = [1], True  # down
    opts.format = "%P|%a|%l|%D|%t|%T|%N|%F|%c|%m|%C|%G|%e|%O|%z|%R|%f|%E|%s|%d|%w|%X"
    assert format_sinfo(nodes, parts, opts, Context(0.0)) == (
        "debug*|up|infinite|0|n/a|n/a||0/0/0/0|0|0|0/0/0/0|(null)|0|0.00|0:0:0|debug|(null)|none|1-infinite|0|0|0\n")
    for fmt in ("%N", "%a"):
        opts.format = fmt
        assert format_sinfo(nodes, parts, opts, Context(0.0)) == ""
