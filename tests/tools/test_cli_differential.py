"""The command lines of the user commands against the real Slurm 22.05 (issue 13, points
4 and 9): every vector of tests/tools/reference/cli/vectors.py, captured on the real
commands into captures.jsonl (capture.py regenerates it), is run here on plurm and the
exit code, stdout and stderr compared after one normalisation applied to both sides.

plurm's commands run in-process (their ``main``), against one real local cluster (4 nodes
n[1-4], partition debug, as the real one), with the environment replaced by the vector's.
KNOWN lists the differences that are allowed, each with its reason; an allowed part must
still differ (a fixed one has to leave the list).
"""

from __future__ import annotations

import io
import json
import os
import pwd
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from plurmtest import Cluster

REF = Path(__file__).parent / "reference" / "cli"
sys.path.insert(0, str(REF))
from vectors import BASE_ENV, FILES, HELD_JOB  # noqa: E402

CAPTURES = [json.loads(line) for line in (REF / "captures.jsonl").read_text().splitlines()]

# id -> (the parts allowed to differ, why).  Parts: "rc", "stdout", "stderr".
KNOWN: dict[str, tuple[tuple[str, ...], str]] = {
    "sinfo-dashdash": (("stdout",), "captured while other jobs ran on the real cluster (mix n[1-2]): "
                       "the states are the real cluster's of that moment"),
    "sinfo-nodes-bad": (("rc", "stdout", "stderr"), "Slurm's hostlist parser takes the malformed n[1- "
                        "as a name (no match, exit 0); plurm refuses it, exit 1"),
    "scontrol-hostnames-bad": (("rc", "stdout", "stderr"), "Slurm's hostlist parser turns the malformed "
                               "n[1- into the name n] (exit 0); plurm refuses it, exit 1"),
    "scancel-bad-signal-number": (("stderr",), "plurm refuses a signal number above the system's; "
                                  "Slurm sends it to the controller, which finds no job"),
    "sbatch-nodes-range": (("stderr",), "--test-only: Slurm's will-run plans -N 1-2 on 2 nodes, "
                           "plurm's on the minimum, 1"),
    "sbatch-nodes-zero": (("stderr",), "--test-only: Slurm's will-run plans -N 0 on no node (0 "
                          "processors), plurm's on 1"),
    "srun-cpu-bind-bad": (("stderr",), "Slurm's line from its task plugin (TaskPlugin=task/none: no "
                          "cpu binding) before the value's error; plurm has no task plugins"),
}

# lines only one side prints, by design
_DROP = [
    # sbatch/srun/salloc -v: the real commands log the C plugins they load; plurm has none
    re.compile(r"^(sbatch|srun|salloc|scancel): (select|cred|auth|gres|switch|topology|route|"
               r"acct_gather\w*|accounting_storage|jobacct_gather|mpi|cli_filter|hash)/\S+.*$"),
    # the real commands' debug log lines (-vv and more): plurm's commands log no such lines
    re.compile(r"^(sbatch|srun|salloc): debug\d?: .*$"),
    # --version: plurm names itself on stderr, after Slurm's line (issue 13 point 10)
    re.compile(r"^plurm \S+ \(a Slurm-compatible workload manager.*$"),
    # options plurm parses but does not act on yet say so (issue 14's, not a parsing matter)
    re.compile(r"^(sbatch|srun|salloc): warning: plurm accepts but does not act on .*$"),
]
_SUBS = [
    (re.compile(r"Submitted batch job \d+"), "Submitted batch job <ID>"),
    (re.compile(r"Job \d+ to start at \S+ using (\d+) processors on nodes \S* in partition"),
     r"Job <ID> to start at <TIME> using \1 processors on nodes <NODES> in partition"),
    # scontrol show job: when it was submitted and where from, the directory the vectors ran in
    (re.compile(r"\b(SubmitTime|LastSchedEval)=\S+"), r"\1=<TIME>"),
    (re.compile(r"\bAllocNode:Sid=\S+"), "AllocNode:Sid=<HOST>:<SID>"),
    (re.compile(r"\b(WorkDir|StdErr|StdOut)=/\S*?(/slurm-[^/\s]+)?(?=\s|$)", re.M), r"\1=<CWD>\2"),
    # squeue -l, sprio -l...: the date line that heads the long form
    (re.compile(r"^\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}$", re.M), "<DATE>"),
    # --version: Debian's build says slurm-wlm, plurm says slurm (as a source build does);
    # tools read the version number
    (re.compile(r"^slurm(?:-wlm)? (22\.05\.8)\b.*$", re.M), r"slurm \1"),
]


def normalise(text: str, job: str | None, parsable: bool) -> str:
    if job:
        text = re.sub(rf"\b{job}\b", "{JOB}", text)
    if parsable:
        text = re.sub(r"^\d+(;\S+)?$", "<ID>", text, flags=re.M)
    for pattern, repl in _SUBS:
        text = pattern.sub(repl, text)
    lines = text.split("\n")
    return "\n".join(line for line in lines if not any(d.match(line) for d in _DROP))


@contextmanager
def _as_command(env: dict[str, str], cwd: Path) -> Iterator[tuple[io.TextIOWrapper, io.TextIOWrapper]]:
    """The process state a command starts with: environment, directory, empty stdin."""
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_io = sys.stdin, sys.stdout, sys.stderr
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    sys.stdin, sys.stdout, sys.stderr = io.TextIOWrapper(io.BytesIO(b"")), out, err
    try:
        yield out, err
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_io
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def run_plurm(cmd: str, argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    import importlib

    main = importlib.import_module(f"plurm.tools.{cmd}").main
    with _as_command(env, cwd) as (out, err):
        try:
            rc = main(list(argv))
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except Exception:   # a crash is a difference like any other: shown, not raised
            import traceback

            rc = -1
            sys.stderr.write(traceback.format_exc())
        rc = 0 if rc is None else rc
    return rc, out.buffer.getvalue().decode(), err.buffer.getvalue().decode()


# what the real cluster's slurm.conf has and a plurm local cluster does not by default: the
# priority plugin and weights (sprio prints them), GPUs (--gres=gpu:1 must be satisfiable)
_LIKE_REAL = {"ClusterName": "anchor", "DefMemPerCPU": "256",
              "AccountingStorageEnforce": "associations",
              # job ids far from the small numbers the outputs hold (the held job's id is
              # replaced by {JOB} wherever it stands alone: 1 would hit NumNodes=1)
              "FirstJobId": "7001",
              "PriorityType": "priority/multifactor", "PriorityWeightAge": "1000",
              "PriorityWeightFairshare": "10000", "PriorityWeightJobSize": "1000",
              "PriorityWeightPartition": "1000", "PriorityWeightQOS": "1000",
              "MaxArraySize": "1001"}


@pytest.fixture(scope="module")
def like_real(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A local cluster shaped as the real one: 4 nodes n[1-4] of 4 GPUs in partition debug,
    multifactor priority with the same weights (its slurm.conf written first, then edited,
    then started: `plurm cluster up` keeps a slurm.conf that exists)."""
    from plurm.tools.localcluster import ClusterShape, LocalCluster

    base = tmp_path_factory.mktemp("clireal")
    local = LocalCluster(str(base / "cluster"))
    local.write_files(ClusterShape(gres="gpu:4"))
    conf = Path(local.conf_path)
    lines = [ln for ln in conf.read_text().splitlines() if ln.split("=", 1)[0] not in _LIKE_REAL]
    conf.write_text("\n".join(lines + [f"{k}={v}" for k, v in _LIKE_REAL.items()]) + "\n")
    env = dict(os.environ, SLURM_CONF=str(conf))
    env.pop("SLURM_JOB_ID", None)
    cluster = Cluster(Path(local.dir), conf, env)
    cluster.up()
    try:
        # the real cluster's association: account anchor with user root (sshare, Account=)
        me = pwd.getpwuid(os.getuid()).pw_name
        cluster.run("sacctmgr", "-i", "add", "account", "anchor", check=True)
        cluster.run("sacctmgr", "-i", "add", "user", me, "account=anchor", check=True)
        yield cluster
    finally:
        cluster.down()


@pytest.fixture(scope="module")
def plurm_side(like_real: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """The vectors' directory and the held job, on the cluster shaped as the real one."""
    cluster = like_real
    cwd = tmp_path_factory.mktemp("cli")
    for name, text in FILES.items():
        (cwd / name).write_text(text)
    env = dict(BASE_ENV, PATH=os.environ["PATH"], SLURM_CONF=str(cluster.conf))
    rc, out, err = run_plurm("sbatch", HELD_JOB, env, cwd)
    assert rc == 0, err
    side = {"cwd": cwd, "env": env, "job": out.strip().split(";")[0], "submitted": []}
    yield side
    run_plurm("scancel", [side["job"], *side["submitted"]], env, cwd)


def _difference(ref: dict, part: str, got: object, want: object, extra: str = "") -> str:
    """The whole difference, line by line (pytest's own cuts long texts short)."""
    import difflib

    head = f"{ref['id']} {part}: {ref['cmd']} {' '.join(ref['argv'])}"
    if not isinstance(got, str) or not isinstance(want, str):
        return f"{head}: plurm {got!r}, Slurm {want!r}\n{extra}"
    diff = difflib.unified_diff(want.splitlines(), got.splitlines(), "slurm", "plurm", lineterm="")
    return head + "\n" + "\n".join(diff)


@pytest.mark.parametrize("ref", CAPTURES, ids=[c["id"] for c in CAPTURES])
def test_vector(ref: dict, plurm_side: dict) -> None:
    job = plurm_side["job"] if ref["job"] else None
    argv = [a.replace("{JOB}", job or "") for a in ref["argv"]]
    rc, out, err = run_plurm(ref["cmd"], argv, dict(plurm_side["env"], **ref["env"]),
                             plurm_side["cwd"])
    if ref["cmd"] == "sbatch" and rc == 0 and "--test-only" not in argv:
        plurm_side["submitted"] += re.findall(r"^(?:Submitted batch job )?(\d+)", out, re.M)
    parsable = "--parsable" in argv
    got = {"rc": rc, "stdout": normalise(out, job, parsable), "stderr": normalise(err, job, parsable)}
    want = {"rc": ref["rc"], "stdout": normalise(ref["stdout"], ref["job"], parsable),
            "stderr": normalise(ref["stderr"], ref["job"], parsable)}
    allowed, why = KNOWN.get(ref["id"], ((), ""))
    for part in ("rc", "stdout", "stderr"):
        if part in allowed:
            assert got[part] != want[part], f"{ref['id']}: {part} now matches; drop it from KNOWN"
        else:
            assert got[part] == want[part], _difference(ref, part, got[part], want[part],
                                                            f"plurm's stderr: {err}")
