"""scontrol show reservation, sinfo -T and scontrol's own checks of a reservation request,
compared with what the real Slurm 22.05 printed (reference/reservations, captured on this
machine: see its README)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from plurm.tools import scontrol_resv
from plurm.tools.scontrol import Scontrol

REF = Path(__file__).parent / "reference" / "reservations"


def _outputs(session: str) -> dict[str, str]:
    """Each command of a capture session -> what it printed (the rc= line left out)."""
    text = (REF / session).read_text()
    found: dict[str, str] = {}
    for block in text.split("### ")[1:]:
        command, _, rest = block.partition("\n")
        found.setdefault(command, rest.rsplit("rc=", 1)[0])
    return found


def _epoch(stamp: str) -> float:
    return time.mktime(time.strptime(stamp, "%Y-%m-%dT%H:%M:%S"))


def _record_from(text: str) -> dict:
    """A reservation record (as the controller sends it) from Slurm's own show output."""
    words = dict(w.split("=", 1) for w in text.split())
    from plurm.grammar.hostlist import expand

    nulls = lambda v: [] if v == "(null)" else v.split(",")  # noqa: E731
    return {"name": words["ReservationName"], "start_time": _epoch(words["StartTime"]),
            "end_time": _epoch(words["EndTime"]), "nodes": expand(words["Nodes"]),
            "users": nulls(words["Users"]), "accounts": nulls(words["Accounts"]),
            "partition": None if words["PartitionName"] == "(null)" else words["PartitionName"],
            "flags": [f for f in words["Flags"].split(",") if f], "state": words["State"],
            "cores": int(words["CoreCnt"]), "features": None}


def test_show_reservation_is_slurms_format() -> None:
    outputs = _outputs("session1.txt")
    shown = outputs["scontrol show reservation"]
    text = (REF / "session1.txt").read_text()
    before = text.split("### sinfo -T\n")[-2]  # the show right before the second sinfo -T: 7 of them
    shown = before.split("### scontrol show reservation\n")[-1].split("rc=", 1)[0]
    blocks = [b + "\n\n" for b in shown.split("\n\n") if b.strip()]
    assert len(blocks) == 7
    for block in blocks:
        assert scontrol_resv.format_reservation(_record_from(block)) == block
    one = outputs["scontrol -o show reservation"]
    assert scontrol_resv.format_reservation(_record_from(one), oneliner=True) == one


def test_sinfo_t_is_slurms_table() -> None:
    text = (REF / "session1.txt").read_text()
    before = text.split("### sinfo -T\n")[-2]  # the show right before the second sinfo -T: 7 of them
    shown = before.split("### scontrol show reservation\n")[-1].split("rc=", 1)[0]
    records = [_record_from(b) for b in shown.split("\n\n") if b.strip()]
    last_table = text.split("### sinfo -T\n")[-1].split("rc=", 1)[0]
    assert scontrol_resv.sinfo_table({"reservations": records}) == last_table
    first_table = text.split("### sinfo -T\n")[1].split("rc=", 1)[0]
    assert first_table == scontrol_resv.sinfo_table({"reservations": []}) == "No reservations in the system\n"


@pytest.mark.parametrize("words, stderr", [
    (["create", "reservation", "ReservationName=r6", "StartTime=now", "Duration=60", "Nodes=n4"],
     "scontrol: error: Either Users/Groups and/or Accounts must be specified.  No reservation created.\n"),
    (["create", "reservation", "ReservationName=r8", "StartTime=now", "Duration=60", "NodeCnt=1", "Users=root",
      "Flags=BOGUS"], "scontrol: error: Error parsing flags BOGUS.  No reservation created.\n"),
    (["create", "reservation", "ReservationName=r11", "Duration=60", "NodeCnt=1", "Users=root"],
     "scontrol: error: A start time must be given.  No reservation created.\n"),
    (["create", "reservation", "ReservationName=mnt", "StartTime=now", "Duration=60", "Nodes=n1", "Users=root",
      "Flags=MAINT", "Bogus=1"], "scontrol: error: Unknown parameter Bogus=1.  No reservation created.\n"),
    (["update", "ReservationName=fut", "Bogus=1"],
     "scontrol: error: Unknown parameter Bogus=1.  No reservation update.\nslurm_update error: No error\n"),
])
def test_scontrols_own_checks_say_what_slurms_say(words: list[str], stderr: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    # (each of these is refused before anything is sent: no controller is needed)
    command = "scontrol " + " ".join(words)
    outputs = {**_outputs("session1.txt"), **_outputs("session2.txt"), **_outputs("session3.txt")}
    assert outputs[command] == stderr  # what the real one printed
    sc = Scontrol()
    sc.request = lambda *_a: pytest.fail("sent")  # type: ignore[method-assign]
    assert sc.run_words(words) == 1
    assert capsys.readouterr().err == stderr


def test_calendar_times_are_read_here_and_now_is_left_to_the_controller() -> None:
    sc = Scontrol()
    fields = scontrol_resv.fields_of(sc, ["StartTime=2026-12-31T10:00:00", "EndTime=now+1hour",
                                          "Flags-=MAINT"], "created")
    assert fields == {"StartTime": str(int(_epoch("2026-12-31T10:00:00"))), "EndTime": "now+1hour",
                      "Flags": "-MAINT"}
    assert re.fullmatch(r"\d+", scontrol_resv.fields_of(sc, ["StartTime=noon"], "created")["StartTime"])


def test_a_reserved_nodes_state_reads_as_slurms() -> None:
    from plurm.tools.sinfo_records import node_matches_states, parse_node_states, state_compact, state_long, \
        state_number

    text = (REF / "session6_node_states.txt").read_text()
    assert "State=IDLE+MAINTENANCE+RESERVED " in text and "State=IDLE+RESERVED " in text
    assert "n1 maint maint\nn2 resv reserved\n" in text
    maint, resv = state_number("IDLE+MAINTENANCE+RESERVED"), state_number("IDLE+RESERVED")
    assert (state_compact(maint), state_long(maint), state_compact(resv), state_long(resv)) == (
        "maint", "maint", "resv", "reserved")
    assert node_matches_states(resv, parse_node_states("resv")) and not node_matches_states(
        state_number("IDLE"), parse_node_states("resv"))
