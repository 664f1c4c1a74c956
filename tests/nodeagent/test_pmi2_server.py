"""The PMI server of one node (nodeagent/pmi2.py) spoken to by a pure-Python client.

Two NodeServers stand for two nodes of one step; the test carries each one's Fence to the
other as srun would (tools/srun_pmi.FenceRelay), so the cross-node fence is exercised without
daemons.  The answers are compared with what 22.05's mpi/pmi2 gave the same client
(tests/nodeagent/reference/mpi/pmi2_session_rank0.txt, captured on the anchor).
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from pmiclient import frame, read_v1, read_v2
from plurm.nodeagent import pmi2, pmi_wire
from plurm.tools.srun_pmi import FenceRelay, process_mapping

REFERENCE = Path(__file__).parent / "reference" / "mpi"


class Node:
    """One node's server and its tasks' ends (the tasks are this test)."""

    def __init__(self, node_id: int, ranks: list[int], tasks_per_node: list[int], job: int = 12) -> None:
        self.node_id = node_id
        self.server = pmi2.NodeServer(job_id=job, step_id=0, ntasks=sum(tasks_per_node),
                                      tasks_per_node=tasks_per_node)
        self.ends: dict[int, socket.socket] = {}
        self.env: dict[int, dict[str, str]] = {}
        for rank in ranks:
            env, fd = self.server.task_end(rank)
            self.env[rank] = env
            self.ends[rank] = socket.socket(fileno=__import__("os").dup(fd))
            self.ends[rank].settimeout(5)
        for rank in ranks:
            self.server.started(rank)
        self.events: list[pmi2.Event] = []

    def pump(self) -> None:
        """Serve whatever the tasks sent (as plurmstepd's loop does on POLLIN)."""
        import select

        while True:
            ready, _, _ = select.select(self.server.fds(), [], [], 0.005)
            if not ready:
                return
            for fd in ready:
                self.events.extend(self.server.readable(fd))


def ask2(node: Node, rank: int, text: str) -> str:
    node.ends[rank].sendall(frame(text))
    node.pump()
    return read_v2(node.ends[rank])


def ask1(node: Node, rank: int, text: str) -> str:
    node.ends[rank].sendall(text.encode() + b"\n")
    node.pump()
    return read_v1(node.ends[rank])


def relay(nodes: list[Node]) -> FenceRelay:
    def send(node_id: int, kind: str, body: dict) -> None:
        if kind == "pmi_fence_done":
            nodes[node_id].server.fence_done(body["seq"], body["kvs"])
    return FenceRelay(len(nodes), send)


def carry(nodes: list[Node], fences: FenceRelay) -> None:
    for node in nodes:
        for event in [e for e in node.events if isinstance(e, pmi2.Fence)]:
            fences.on_message("pmi_fence", {"node_id": node.node_id, "seq": event.seq, "kvs": event.kvs})
            node.events.remove(event)


def test_pmi2_session_across_two_nodes_matches_22_05() -> None:
    nodes = [Node(0, [0, 1], [2, 2]), Node(1, [2, 3], [2, 2])]
    fences = relay(nodes)
    assert nodes[0].env[1] == {"PMI_FD": nodes[0].env[1]["PMI_FD"], "PMI_JOBID": "12.0", "PMI_RANK": "1",
                               "PMI_SIZE": "4"}
    got: list[str] = []
    for node in nodes:
        for rank in node.ends:
            node.ends[rank].sendall(b"cmd=init pmi_version=2 pmi_subversion=0\n")
            node.pump()
            line = read_v1(node.ends[rank])
            asked = [f"cmd=fullinit;pmijobid=12.0;pmirank={rank};threaded=FALSE;", "cmd=job-getid;",
                     "cmd=info-getjobattr;key=PMI_process_mapping;", "cmd=info-getjobattr;key=universeSize;",
                     f"cmd=info-putnodeattr;key=node{rank};value=v{rank};", f"cmd=info-getnodeattr;key=node{rank};",
                     "cmd=info-getnodeattr;key=nosuchattr;", f"cmd=kvs-put;key=k{rank};value=val{rank};"]
            answers = [f"{q} -> {ask2(node, rank, q)}" for q in asked]
            if rank == 0:
                got = [line, *answers]
            node.ends[rank].sendall(frame("cmd=kvs-fence;"))
            node.pump()
    # Nobody is answered before every node is in the fence.
    for node in nodes:
        for end in node.ends.values():
            end.settimeout(0.05)
            with pytest.raises(TimeoutError):
                end.recv(1)
            end.settimeout(5)
    carry(nodes, fences)
    for node in nodes:
        for rank, end in node.ends.items():
            assert read_v2(end) == "cmd=kvs-fence-response;rc=0;"
    got.append("cmd=kvs-fence; -> cmd=kvs-fence-response;rc=0;")
    for r in range(4):
        q = f"cmd=kvs-get;jobid=12.0;srcid=-1;key=k{r};"
        answer = ask2(nodes[1], 3, q)
        got.append(f"{q} -> {ask2(nodes[0], 0, q)}")
        assert answer == f"cmd=kvs-get-response;rc=0;found=TRUE;value=val{r};"
    got.append(f"cmd=kvs-get;key=missing; -> {ask2(nodes[0], 0, 'cmd=kvs-get;key=missing;')}")
    got.append(f"cmd=finalize; -> {ask2(nodes[0], 0, 'cmd=finalize;')}")
    reference = [line for line in (REFERENCE / "pmi2_session_rank0.txt").read_text().splitlines()
                 if "key=nosuch;" not in line]  # (22.05 answers an unknown job attribute with junk)
    assert got == reference


def test_pmi1_as_mpich_speaks_it() -> None:
    """The exchanges Debian's MPICH 4.0 makes in MPI_Init (captured under 22.05), one node."""
    node = Node(0, [0, 1], [2, 2], job=14)
    assert ask1(node, 0, "cmd=init pmi_version=1 pmi_subversion=1") == \
        "cmd=response_to_init rc=0 pmi_version=1 pmi_subversion=1"
    expected = {}
    lines = (REFERENCE / "pmi1_mpich_rank0.txt").read_text().splitlines()
    for ask, reply in zip(lines[2::2], lines[3::2]):
        expected[ask[3:]] = reply[3:]
    for q in ("cmd=get_maxes", "cmd=get_appnum", "cmd=get_my_kvsname", "cmd=get kvsname=14.0 key=PMI_process_mapping"):
        assert ask1(node, 0, q) == expected[q]
    assert ask1(node, 0, "cmd=get kvsname=14.0 key=absent").startswith("cmd=get_result rc=-1")
    assert ask1(node, 0, "cmd=put kvsname=14.0 key=a value=1") == "cmd=put_result rc=0"
    node.ends[0].sendall(b"cmd=barrier_in\n")
    node.pump()
    assert not node.events  # rank 1 is not in yet
    assert ask1(node, 1, "cmd=init pmi_version=1 pmi_subversion=1").startswith("cmd=response_to_init rc=0")
    node.ends[1].sendall(b"cmd=barrier_in\n")
    node.pump()
    assert node.events == [pmi2.Fence(0, {"a": "1"})]
    node.server.fence_done(0, {"a": "1", "b": "2"})
    assert read_v1(node.ends[0]) == read_v1(node.ends[1]) == "cmd=barrier_out rc=0"
    assert ask1(node, 1, "cmd=get kvsname=14.0 key=b") == "cmd=get_result rc=0 value=2"
    assert ask1(node, 1, "cmd=get_universe_size") == "cmd=universe_size rc=0 size=4"
    assert ask1(node, 0, "cmd=finalize") == "cmd=finalize_ack rc=0"
    node.ends[1].sendall(b"cmd=abort exitcode=7\n")
    node.pump()
    assert pmi2.Abort(1, 7, "") in node.events


def test_a_task_that_ends_releases_the_fence_and_hostile_frames_close_only_their_task() -> None:
    node = Node(0, [0, 1, 2], [3])
    for rank in (0, 1):
        node.ends[rank].sendall(b"cmd=init pmi_version=2 pmi_subversion=0\n")
        node.pump()
        read_v1(node.ends[rank])
    node.ends[0].sendall(frame("cmd=kvs-fence;"))
    node.ends[1].sendall(b"999999cmd=x;")  # a length past MPICH's bound
    node.ends[2].close()  # (a task that ended without PMI)
    node.pump()
    complaints = [e for e in node.events if isinstance(e, pmi2.Complaint)]
    assert complaints and "PMI-1 line" not in complaints[0].text and "999999" in complaints[0].text
    assert node.ends[1].recv(10) == b""  # its connection is closed, the others' are not
    assert [e for e in node.events if isinstance(e, pmi2.Fence)] == [pmi2.Fence(0, {})]
    node.events.clear()
    node.ends[0].sendall(b"000004junk")  # not key=value
    node.pump()
    assert isinstance(node.events[0], pmi2.Complaint)
    node.server.close()
    other = Node(0, [0], [1])
    other.ends[0].sendall(b"x" * (pmi_wire.MAX_COMMAND + 1))  # a PMI-1 line without end
    other.pump()
    assert "PMI-1 line longer" in other.events[0].text


def test_unknown_command_is_22_05s_error_and_ends_the_step() -> None:
    node = Node(0, [0], [1])
    node.ends[0].sendall(b"cmd=init pmi_version=1 pmi_subversion=1\n")
    node.pump()
    read_v1(node.ends[0])
    node.ends[0].sendall(b"cmd=bogus_cmd\n")
    node.pump()
    assert node.events == [pmi2.Complaint(0, "mpi/pmi2: invalid pmi1 command received: 'bogus_cmd'"),
                           pmi2.Abort(0, 1, "")]


def test_relay_answers_every_node_once_all_fenced_and_refuses_out_of_turn(capsys: pytest.CaptureFixture) -> None:
    sent: list[tuple[int, str, dict]] = []
    fences = FenceRelay(2, lambda node, kind, body: sent.append((node, kind, body)))
    fences.on_message("pmi_fence", {"node_id": 0, "seq": 0, "kvs": {"a": "1"}})
    assert not sent
    fences.on_message("pmi_fence", {"node_id": 0, "seq": 0, "kvs": {}})  # twice
    fences.on_message("pmi_fence", {"node_id": 7, "seq": 0, "kvs": {}})  # no such node
    fences.on_message("pmi_fence", {"node_id": "x"})  # malformed
    fences.on_message("pmi_fence", {"node_id": 1, "seq": 0, "kvs": {"b": "2"}})
    assert sent == [(0, "pmi_fence_done", {"seq": 0, "kvs": {"a": "1", "b": "2"}}),
                    (1, "pmi_fence_done", {"seq": 0, "kvs": {"a": "1", "b": "2"}})]
    err = capsys.readouterr().err
    assert err.count("srun: error: mpi/pmi2:") == 3
    fences.on_message("pmi_abort", {"node_id": 1, "rank": 3, "exit_code": 7})
    fences.on_message("pmi_abort", {"node_id": 0, "rank": 0})  # (once)
    assert [kind for _, kind, _ in sent[2:]] == ["pmi_kill", "pmi_kill"]
    assert capsys.readouterr().err == "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"


def test_process_mapping() -> None:
    assert pmi_wire.process_mapping(pmi_wire.block_layout([2, 2])) == "(vector,(0,2,2))"
    assert pmi_wire.process_mapping(pmi_wire.block_layout([3, 1])) == "(vector,(0,1,3),(1,1,1))"
    assert process_mapping([[0, 2], [1, 3]]) == "(vector,(0,2,1),(0,2,1))"  # -m cyclic
