"""Node administration as the commands show it: scontrol update NodeName / reboot /
cancel_reboot / reconfigure (their command lines, messages and exit codes), and the node
states the core sets as sinfo and scontrol show node print them, compared with Slurm
22.05's captures (../shared/reference/slurm-22.05) where a capture exists.

The records come from a real core (corescheduler/core_nodeadmin.py) through the service
layer's node_info, the same dicts the controller sends.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from scontroltest import FakeScontrol, run

from plurm.corescheduler.core import ClusterCore, CoreSettings
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.service import Service
from plurm.tools import scontrol_node, sinfo, sinfofmt
from plurm.tools.showfmt import format_node
from plurm.wire import protocol
from plurm.wire.client import ClientError
from plurm.wire.model import JobSpec, Node, Partition

REF = Path(__file__).resolve().parents[3] / "shared" / "reference" / "slurm-22.05"
if not REF.is_dir():
    REF = Path("/work/shared/reference/slurm-22.05")
ROOT = Identity(0, 0, "root", operator=True)
ALICE = Identity(1001, 1001, "alice", frozenset({"alice"}))
NOW = time.mktime((2026, 11, 29, 15, 45, 16, 0, 0, -1))
DRAIN_TIME = time.mktime((2026, 11, 29, 15, 44, 41, 0, 0, -1))


def ref(name: str) -> str:
    return (REF / f"{name}.txt").read_text()


# ------------------------------------------------------------------ scontrol's command lines
def _sc() -> FakeScontrol:
    return FakeScontrol({"update_node": {"ok": True}, "reboot_nodes": {"ok": True}, "reconfigure": {"ok": True}})


def test_update_node_hostlist_abbreviated_state_and_reason() -> None:
    sc = _sc()
    assert run(sc, "update", "nodename=n[1-3],n7", "state=dra", "reason=disk check") == (0, "", "")
    assert sc.sent == [("update_node", {"nodes": ["n1", "n2", "n3", "n7"], "state": "DRAIN",
                                        "reason": "disk check"})]
    for word, state in (("RESUME", "RESUME"), ("res", "RESUME"), ("undr", "UNDRAIN"), ("Idle", "IDLE"),
                        ("down", "DOWN"), ("cancel_reboot", "CANCEL_REBOOT")):
        assert scontrol_node.node_state(word) == state
    assert scontrol_node.node_state("dr") is None  # three letters at least, as Slurm's
    assert scontrol_node.node_state("drainx") is None


def test_update_node_refusals_and_their_exit_codes() -> None:
    sc = _sc()
    rc, out, err = run(sc, "update", "NodeName=n1", "State=DRAIN")
    assert (rc, out, err) == (1, "", "You must specify a reason when DOWNING or DRAINING a node. Request denied\n")
    rc, _, err = run(_sc(), "update", "NodeName=n1", "State=bogus")
    assert rc == 1 and err.splitlines()[:2] == ["Invalid input: State=bogus", "Request aborted"]
    assert err.splitlines()[2].startswith("Valid states are: NoResp DRAIN FAIL FUTURE RESUME POWER_DOWN")
    assert run(_sc(), "update", "NodeName=n1")[0:3:2] == (1, "No changes specified\n")
    assert sc.sent == []
    refused = FakeScontrol({"update_node": ClientError("Invalid node name specified", "InvalidNode")})
    assert run(refused, "update", "NodeName=nosuch", "State=RESUME") == (
        1, "", "slurm_update error: Invalid node name specified\n")
    denied = FakeScontrol({"update_node": ClientError("Invalid user id", "AccessDenied")})
    assert run(denied, "update", "NodeName=n1", "State=DRAIN", "Reason=x")[2] == "slurm_update error: Invalid user id\n"


def test_reboot_command_line() -> None:
    sc = _sc()
    assert run(sc, "reboot", "ASAP", "nextstate=down", "reason=firmware", "n[1-2]") == (0, "", "")
    assert sc.sent[-1] == ("reboot_nodes", {"nodes": ["n1", "n2"], "asap": True, "next_state": "DOWN",
                                            "reason": "firmware"})
    assert run(sc, "reboot_nodes", "ALL")[0] == 0
    assert sc.sent[-1][1]["nodes"] == [] and sc.sent[-1][1]["asap"] is False
    assert run(sc, "reb", "n3")[0] == 0 and sc.sent[-1][1]["nodes"] == ["n3"]
    before = len(sc.sent)
    assert run(sc, "reboot", "ASAP") == (1, "", "Missing node list. Specify ALL|<NodeList>\n")
    assert run(sc, "reboot", "nextstate=maybe", "n1")[0] == 1
    assert len(sc.sent) == before
    sc = _sc()  # (an error's exit status stays for the rest of an scontrol session)
    assert run(sc, "cancel_reboot", "n[1-2]")[0] == 0
    assert sc.sent[-1] == ("update_node", {"nodes": ["n1", "n2"], "state": "CANCEL_REBOOT", "reason": None})
    assert run(sc, "cancel_reboot")[0] == 1
    refused = FakeScontrol({"reboot_nodes": ClientError("Invalid node name specified", "InvalidNode")})
    assert run(refused, "reboot", "n9") == (1, "", "scontrol_reboot_nodes error: Invalid node name specified\n")


def test_reconfigure_command_line() -> None:
    sc = _sc()
    assert run(sc, "reconfigure") == (0, "", "")
    assert sc.sent == [("reconfigure", {})]
    assert run(sc, "reconfig")[0] == 0  # a unique prefix
    # The Slurm 22.05 capture (tests/security/reference/slurm-22.05-authz/s5_a_reconfigure)
    denied = FakeScontrol({"reconfigure": ClientError("Invalid user id", "AccessDenied")})
    assert run(denied, "reconfigure") == (1, "", "slurm_reconfigure error: Invalid user id\n")
    bad = FakeScontrol({"reconfigure": ClientError("/etc/slurm.conf:7: unknown key 'Bogus'", "ConfigError")})
    assert run(bad, "reconfigure") == (1, "", "slurm_reconfigure error: /etc/slurm.conf:7: unknown key 'Bogus'\n")


# ------------------------------------------------------------------ states as the core sets them
def _cluster() -> tuple[ClusterCore, Service]:
    nodes = {f"n{i}": Node(name=f"n{i}", cpus=4, cores_per_socket=4, real_memory=2800, gres=["gpu:4"],
                           responding=True, boot_time=NOW - 100, free_mem=23827) for i in range(1, 9)}
    core = ClusterCore(nodes, {"debug": Partition(name="debug", nodes=list(nodes), default=True)},
                       CoreSettings(cluster_name="t"), now=NOW - 60)
    return core, Service(core)


def _records(service: Service) -> tuple[list[dict], list[dict]]:
    reply = protocol.to_builtins(service.node_info(protocol.NodeInfoRequest()))
    return reply["nodes"], reply["partitions"]


def _sinfo(service: Service, *argv: str) -> str:
    nodes, parts = _records(service)
    opts = sinfo.parse_args(list(argv), environ={})
    return sinfofmt.format_sinfo(nodes, parts, opts, sinfofmt.Context(NOW, environ={}))


def _update(service: Service, nodes: list[str], state: str, reason: str | None = None, now: float = NOW) -> None:
    service.update_node(protocol.UpdateNode(nodes=nodes, state=state, reason=reason), ROOT, now)


def _start(core: ClusterCore, service: Service, node: str, cpus: int) -> int:
    job_id = service.submit(protocol.SubmitJob(spec=JobSpec(script="#!/bin/sh\nsleep 9\n", ntasks=cpus,
                                                            req_nodes=[node])), ALICE, NOW - 30)["job_id"]
    core.schedule(NOW - 30)
    return job_id


def test_a_drained_node_as_sinfo_R_and_scontrol_show_node_print_it() -> None:
    core, service = _cluster()
    _update(service, ["n8"], "DRAIN", "anchor drain test", now=DRAIN_TIME)
    assert _sinfo(service, "-R") == ref("busy_sinfo_R")
    [n8] = [n for n in _records(service)[0] if n["name"] == "n8"]
    shown = format_node(n8).splitlines()
    captured = ref("busy_scontrol_show_node_n8_drained").splitlines()
    state_line = next(line for line in captured if line.strip().startswith("State="))
    assert next(line for line in shown if line.strip().startswith("State=")) == state_line
    assert next(line for line in shown if "Reason=" in line) == next(line for line in captured if "Reason=" in line)


def test_draining_then_drained_and_the_state_filters() -> None:
    core, service = _cluster()
    job_id = _start(core, service, "n1", 2)
    _update(service, ["n1", "n2"], "DRAIN", "maint")
    _update(service, ["n3"], "DOWN", "dead fan")
    assert _sinfo(service, "-h", "-o", "%N %t %T") == "n1 drng draining\nn2 drain drained\nn[4-8] idle idle\n" \
        "n3 down down\n"
    assert _sinfo(service, "-h", "-t", "draining", "-o", "%N") == "n1\n"
    assert _sinfo(service, "-h", "-t", "drained", "-o", "%N") == "n2\n"
    assert _sinfo(service, "-h", "-t", "drain,down", "-o", "%N %t") == "n1 drng\nn2 drain\nn3 down\n"
    # As Slurm's sinfo filter: a draining or drained node matches drain/draining/drained only,
    # never its base state.
    assert _sinfo(service, "-h", "-t", "mix,alloc", "-o", "%N") == ""
    assert _sinfo(service, "-h", "-t", "idle", "-o", "%N") == "n[4-8]\n"
    assert _sinfo(service, "-h", "-R", "-t", "down", "-o", "%E %N") == "dead fan n3\n"
    assert sorted(_sinfo(service, "-h", "-R", "-o", "%20E %N").splitlines()) == [
        "dead fan             n3", "maint                n[1-2]"]  # (draining and drained: one reason, one line)
    core.job_ended(job_id, 0, 0, NOW, NOW)
    assert _sinfo(service, "-h", "-t", "drained", "-o", "%N %t") == "n[1-2] drain\n"
    [n1] = [n for n in _records(service)[0] if n["name"] == "n1"]
    assert "State=IDLE+DRAIN " in format_node(n1)


def test_reboot_states_in_sinfo() -> None:
    core, service = _cluster()
    _start(core, service, "n1", 2)
    _start(core, service, "n2", 2)
    service.reboot_nodes(protocol.RebootNodes(nodes=["n1"], asap=True), ROOT, NOW)
    service.reboot_nodes(protocol.RebootNodes(nodes=["n2", "n3"]), ROOT, NOW)
    assert core.nodes["n3"].reboot == "issued"  # idle: at once
    out = _sinfo(service, "-h", "-N", "-o", "%N %t %T")
    assert out.splitlines()[:3] == ["n1 drng@ draining@", "n2 mix@ mixed@", "n3 boot^ reboot_issued"]
    assert _sinfo(service, "-h", "-t", "reboot", "-o", "%N") == "n[2-3]\n"  # (n1 is draining: drain states only)
    [n1] = [n for n in _records(service)[0] if n["name"] == "n1"]
    assert "State=MIXED+DRAIN+REBOOT_REQUESTED " in format_node(n1)
    assert _sinfo(service, "-h", "-R", "-o", "%E|%N") == "Reboot ASAP|n1\n"


def test_sinfo_accepts_the_states_plurm_never_sets() -> None:
    core, service = _cluster()
    for word in ("resv", "reserved", "npc", "perfctrs", "cloud", "planned", "power_up", "powering_up",
                 "powering_down", "reboot_requested", "reboot_issued"):
        assert _sinfo(service, "-h", "-t", word, "-o", "%N") == ""
    assert _sinfo(service, "-h", "-t", "resv,idle", "-o", "%N") == "n[1-8]\n"


@pytest.mark.parametrize("word", ["bogus", "rebooting", "boot"])
def test_sinfo_refuses_unknown_states(word: str) -> None:
    with pytest.raises(sinfo.Usage) as info:
        sinfo.parse_args(["-t", word], environ={})
    assert info.value.code == 1 and f'Bad state string: "{word}"' in info.value.text
