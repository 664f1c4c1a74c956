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
    (re.compile(r"Job \d+ to start at \S+ using (\d+) processors on nodes \S+ in partition"),
     r"Job <ID> to start at <TIME> using \1 processors on nodes <NODES> in partition"),
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
_LIKE_REAL = {"PriorityType": "priority/multifactor", "PriorityWeightAge": "1000",
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
            assert got[part] == want[part], f"{ref['id']} {part}: {' '.join(ref['argv'])}"
