"""The SWF reader: header, unknown (-1) fields, cancelled jobs, malformed lines."""

from __future__ import annotations

import gzip

import pytest
from simhelpers import swf_line

from plurm.tools.simulate import engine, swf


def test_header_fields_and_comments():
    trace = swf.parse_swf([
        "; Version: 2.2",
        "; Computer: IBM SP2",
        "; MaxNodes: 128",
        "; MaxProcs: 1024",
        "; UnixStartTime: 1041379200",
        ";",
        "; this line is a note, not a field",
        swf_line(1, 0, 4, 10, 60),
    ])
    assert trace.header.max_nodes == 128 and trace.header.max_procs == 1024
    assert trace.header.unix_start_time == 1041379200
    assert trace.header.fields["Computer"] == "IBM SP2"
    assert trace.header.comments == ["this line is a note, not a field"]
    assert [j.job for j in trace.jobs] == [1]


def test_unknown_fields():
    # requested processors -1: the allocated count is the size; requested time -1: no
    # limit of its own (the partition's applies); every other -1 is kept as unknown.
    line = "7 100 -1 30 16 -1 -1 -1 -1 -1 1 -1 -1 -1 -1 -1 -1 -1"
    job = swf.parse_swf([line]).jobs[0]
    assert job.procs == 16 and job.req_procs == -1 and job.req_time == -1
    trace_job = engine.TraceJob.from_swf(job)
    assert trace_job.limit_min is None and trace_job.procs == 16 and trace_job.run == 30
    assert trace_job.user == -1


def test_requested_time_rounds_up_to_minutes():
    job = swf.parse_swf([swf_line(1, 0, 1, 10, 61)]).jobs[0]
    assert engine.TraceJob.from_swf(job).limit_min == 2


def test_limit_from_the_partition_when_the_trace_has_none():
    conf = engine.load_conf(text=engine.default_conf_text(1, 4).replace("MaxTime=INFINITE", "MaxTime=30"))
    sim = engine.Simulation(conf)
    trace = swf.parse_swf(["1 0 -1 5000 4 -1 -1 4 -1 -1 1 1 1 -1 -1 -1 -1 -1"])
    result = sim.run([engine.TraceJob.from_swf(j) for j in trace.jobs])
    assert result.records[0].end == 30 * 60  # killed at the partition's MaxTime
    assert result.records[0].state == "TIMEOUT"


def test_cancelled_jobs_that_never_ran_are_skipped_and_counted():
    rows = [swf_line(1, 0, 4, 10, 60), swf_line(2, 5, 4, -1, 60, status=5), swf_line(3, 6, 4, 0, 60, status=5),
            swf_line(4, 7, 4, 20, 60, status=5), swf_line(5, 8, 4, 20, 60, status=0)]
    trace = swf.parse_swf(rows)
    assert [j.job for j in trace.jobs] == [1, 4, 5]  # a cancelled job that ran, and a failed one, stay
    assert trace.skipped == {"cancelled_before_start": 2}
    assert trace.skipped_total == 2


def test_jobs_without_a_size_or_run_time_are_skipped():
    rows = ["1 0 -1 10 -1 -1 -1 -1 60 -1 1 1 1 -1 -1 -1 -1 -1", "2 0 -1 -1 4 -1 -1 4 60 -1 1 1 1 -1 -1 -1 -1 -1"]
    trace = swf.parse_swf(rows)
    assert trace.jobs == [] and trace.skipped == {"no_size": 1, "no_run_time": 1}


@pytest.mark.parametrize("line, message", [
    ("1 0 -1 10 4", "expected 18 fields, found 5"),
    ("1 0 -1 10 4 -1 -1 4 60 -1 1 1 1 -1 -1 -1 -1 -1 9", "expected 18 fields, found 19"),
    ("1 0 -1 ten 4 -1 -1 4 60 -1 1 1 1 -1 -1 -1 -1 -1", "field 4 (run) is not a number: 'ten'"),
    ("1 -5 -1 10 4 -1 -1 4 60 -1 1 1 1 -1 -1 -1 -1 -1", "submit time -5 is negative"),
    ("1 0 -1 nan 4 -1 -1 4 60 -1 1 1 1 -1 -1 -1 -1 -1", "field 4 (run) is not finite"),
])
def test_a_malformed_line_is_a_typed_error_with_its_line_number(line, message):
    with pytest.raises(swf.SwfError) as info:
        swf.parse_swf(["; MaxNodes: 4", "", swf_line(1, 0, 4, 10, 60), line], "t.swf")
    assert info.value.line == 4
    assert message in info.value.message
    assert str(info.value).startswith("t.swf:4: ")


def test_jobs_come_out_in_submit_order():
    trace = swf.parse_swf([swf_line(2, 50, 1, 1, 60), swf_line(1, 10, 1, 1, 60), swf_line(3, 50, 1, 1, 60)])
    assert [j.job for j in trace.jobs] == [1, 2, 3]


def test_write_and_read_back(tmp_path):
    trace = swf.parse_swf(["; MaxNodes: 2", "; MaxProcs: 8", swf_line(1, 0, 4, 10.5, 60), swf_line(2, 3, 8, 7, -1)])
    path = tmp_path / "t.swf"
    swf.write_swf(path, trace.header, trace.jobs)
    again = swf.read_swf(path)
    assert again.jobs == trace.jobs and again.header.max_procs == 8
    zipped = tmp_path / "t.swf.gz"
    with gzip.open(zipped, "wt") as handle:
        handle.write(path.read_text())
    assert swf.read_swf(zipped).jobs == trace.jobs
