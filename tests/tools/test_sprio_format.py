"""sprio's output, formatted from priority_factors replies, compared with Slurm 22.05's.

The default layout is compared byte for byte with the reference capture; the other
layouts with sprio(1)'s documented formats and the headers observed on 22.05 clusters.
"""

from __future__ import annotations


import pytest

from plurm.tools import sprio
from plurm.common.cli import Usage
from plurmtest import REFERENCE



def _reference(name: str) -> str:
    """A file of the reference capture (../shared/reference), or skip where there is none."""
    path = REFERENCE / name
    if not path.exists():
        pytest.skip(f"reference capture {name} not available")
    return path.read_text()

# The reference cluster's slurm.conf: no PriorityWeightAssoc, no PriorityWeightTRES.
WEIGHTS = {"age": 1000, "assoc": 0, "fairshare": 10000, "jobsize": 1000, "partition": 1000, "qos": 1000}
LONG_HEADER = ("          JOBID PARTITION     USER   PRIORITY       SITE        AGE      ASSOC  FAIRSHARE    JOBSIZE"
               "  PARTITION        QOS        NICE                 TRES")
NORM_HEADER = "          JOBID PARTITION PRIORITY   AGE        FAIRSHARE  JOBSIZE    PARTITION  QOS       "


def job(job_id: int, priority: int = 1625, user: str = "root", partition: str = "debug", nice: int = 0,
        **factors: float) -> dict:
    base = {"age": 0.0, "assoc": 0.0, "fairshare": 0.0, "jobsize": 0.625, "partition": 1.0, "qos": 0.0}
    base.update(factors)
    return {"job_id": job_id, "partition": partition, "user": user, "user_id": 0, "priority": priority,
            "factors": base, "site": 0, "nice": nice}


def reply(*jobs: dict, weights: dict | None = None) -> dict:
    return {"type": "priority/multifactor", "cluster": "anchor", "weights": WEIGHTS if weights is None else weights,
            "jobs": list(jobs)}


def run(argv: list[str], answer: dict) -> tuple[str, str]:
    return sprio.format_sprio(answer, sprio.parse_args(argv, environ={}))


def columns(header: str) -> list[int]:
    """Where each header word ends (right-justified columns end with their title)."""
    ends, i = [], 0
    for word in header.split():
        i = header.index(word, i) + len(word)
        ends.append(i)
    return ends


def test_default_is_the_reference_capture() -> None:
    """busy_sprio: pending jobs 28 (-N8 --exclusive) and 32 (an array of those); ASSOC (weight 0)
    and TRES (no TRES weights) are left out."""
    out, err = run([], reply(job(28), job(32)))
    assert out == _reference("busy_sprio.txt")
    assert err == ""


def test_long_shows_every_factor() -> None:
    """-l: the fixed format of sprio(1), whatever the weights: USER, ASSOC, NICE, TRES."""
    out, _ = run(["-l"], reply(job(28), job(41, priority=978, user="averylongname", nice=100, jobsize=0.078125)))
    lines = out.splitlines()
    assert lines[0] == LONG_HEADER
    assert lines[1] == ("             28 debug         root       1625          0          0          0          0"
                        "        625       1000          0           0" + " " * 21)
    # the user cut to 8 characters, the nice value in its own column, every value under its title
    assert lines[2].split() == ["41", "debug", "averylon", "978", "0", "0", "0", "0", "78", "1000", "0", "100"]
    ends = columns(LONG_HEADER)
    for line in lines[1:]:
        right = [i for k, i in enumerate(ends) if k != 1]  # all but PARTITION (left-justified) and TRES
        assert all(line[i - 1] != " " for i in right[:-1])
        assert len(line) == len(LONG_HEADER)


def test_norm_is_left_justified_fractions() -> None:
    """-n: the priority over 2^32-1 (8 decimals), each factor with 7; no SITE column."""
    out, _ = run(["-n"], reply(job(28, age=0.5, fairshare=0.25)))
    assert out.splitlines() == [
        NORM_HEADER,
        "             28 debug     0.00000038 0.5000000  0.2500000  0.6250000  1.0000000  0.0000000 ",
    ]


def test_weights_row() -> None:
    """-w: the header, then the weights (SITE 1); no job rows."""
    out, _ = run(["-w"], reply(job(28)))
    ref = _reference("busy_sprio.txt").splitlines()
    assert out.splitlines() == [ref[0], "        Weights" + " " * 31 + "1" + "".join(
        f" {w:>10}" for w in (1000, 10000, 1000, 1000, 1000))]
    out, _ = run(["-w", "-h", "-l"], reply(job(28)))
    # PARTITION, USER, PRIORITY blank; SITE 1; every weight (ASSOC 0 too); NICE, TRES blank.
    assert out == ("        Weights" + " " * 40 + "1       1000          0      10000       1000"
                   "       1000       1000" + " " * 12 + " " * 21 + "\n")
    out, _ = run(["-w", "-n", "-h"], reply())
    assert out == "        Weights" + " " * 22 + "1000       10000      1000       1000       1000      \n"


def test_zero_weights_leave_columns_out() -> None:
    weights = {"age": 0, "assoc": 5, "fairshare": 0, "jobsize": 0, "partition": 0, "qos": 7}
    out, _ = run([], reply(job(5, priority=12, assoc=1.0, qos=1.0), weights=weights))
    assert out.splitlines() == [
        "          JOBID PARTITION   PRIORITY       SITE      ASSOC        QOS",
        "              5 debug             12          0          5          7",
    ]
    out, _ = run(["-n"], reply(job(5, priority=12, assoc=1.0, qos=1.0), weights=weights))
    assert out.splitlines()[0] == "          JOBID PARTITION PRIORITY   ASSOC      QOS       "


def test_users_add_the_user_column() -> None:
    out, _ = run(["-u", "root"], reply(job(28)))
    assert out.splitlines() == [
        "          JOBID PARTITION     USER   PRIORITY       SITE        AGE  FAIRSHARE    JOBSIZE  PARTITION        QOS",
        "             28 debug         root       1625          0          0          0        625       1000          0",
    ]


def test_weighted_factors_round_and_the_priority_truncates() -> None:
    """Each column is printf's %.0f of weight × factor; they may add up to more than PRIORITY."""
    out, _ = run(["-h"], reply(job(7, priority=1078, age=400 / 604800, jobsize=0.078125)))
    assert out.split() == ["7", "debug", "1078", "0", "1", "0", "78", "1000", "0"]


def test_partition_filter_and_long_names() -> None:
    answer = reply(job(1, partition="standard-long"), job(2, partition="gpu"))
    out, _ = run(["-h"], answer)
    assert [line[:25] for line in out.splitlines()] == ["              1 standard-", "              2 gpu      "]
    out, _ = run(["-h", "-p", "gpu,other"], answer)
    assert [line.split()[0] for line in out.splitlines()] == ["2"]


def test_jobs_not_found() -> None:
    """-j naming no listed job (running, held, not eligible, unknown): one line on stdout."""
    assert run(["-j5"], reply()) == ("Unable to find jobs matching user/id(s) specified\n", "")
    assert run([], reply())[0] == _reference("busy_sprio.txt").splitlines(keepends=True)[0]


def test_format_option() -> None:
    out, err = run(["-o", "%i|%.6Y|%J|%j|%N|%c|%Z", "-h"], reply(job(28)))
    assert out == "28|  1625|625|0.6250000|0|anchor|\n"
    assert err == "sprio: error: Invalid job format specification: Z\n"
    out, _ = run(["--format=%5i:%r"], reply(job(28)))
    assert out == "JOBID:PARTITION\n28   :debug\n"
    opts = sprio.parse_args([], environ={"SPRIO_FORMAT": "%i %u"})
    assert sprio.format_sprio(reply(job(28)), opts)[0] == "JOBID USER\n28 root\n"


def test_sort() -> None:
    answer = reply(job(1, priority=10, user="b"), job(2, priority=30, user="a"), job(3, priority=20, user="a"))
    order = [line.split()[0] for line in run(["-h", "-S", "-y"], answer)[0].splitlines()]
    assert order == ["2", "3", "1"]
    order = [line.split()[0] for line in run(["-h", "--sort=u,-Y"], answer)[0].splitlines()]
    assert order == ["2", "3", "1"]
    order = [line.split()[0] for line in run(["-h", "-S", "+i"], answer)[0].splitlines()]
    assert order == ["1", "2", "3"]


def test_job_list_arguments() -> None:
    assert sprio.parse_args(["-j12,13_2"], environ={}).jobs == [12, 13]
    assert sprio.parse_args(["-j", "12,13"], environ={}).jobs == [12, 13]
    assert sprio.parse_args(["--jobs=14"], environ={}).jobs == [14]
    assert sprio.parse_args([], environ={}).jobs is None
    with pytest.raises(Usage) as exc:
        sprio.parse_args(["-l", "extra"], environ={})
    assert exc.value.code == 1
    # the error on stderr, the usage on stdout (as Slurm's sprio)
    assert exc.value.text == "sprio: error: Unrecognized option: extra\n"
    assert exc.value.usage.startswith("Usage: sprio [-j jid[s]]")


@pytest.mark.parametrize("argv, code, stream, start", [
    (["-Z"], 1, "stderr", "sprio: invalid option -- 'Z'\nTry \"sprio --help\" for more information\n"),
    (["--bogus"], 1, "stderr", "sprio: unrecognized option '--bogus'\n"),
    (["-o"], 1, "stderr", "sprio: option requires an argument -- 'o'\n"),
    (["--usage"], 0, "stdout", "Usage: sprio [-j jid[s]] [-u user_name[s]] [-o format] [-p partitions]\n"),
    (["--help"], 0, "stdout", "Usage: sprio [OPTIONS]\n      --federation"),
])
def test_option_errors_and_help(argv: list[str], code: int, stream: str, start: str) -> None:
    """As the installed sprio 22.05.8 answers (these need no controller)."""
    with pytest.raises(Usage) as exc:
        sprio.parse_args(argv, environ={})
    assert (exc.value.code, exc.value.stream) == (code, stream)
    assert exc.value.text.startswith(start)
