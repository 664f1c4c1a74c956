"""srun's options that act where the tasks start, real daemons side by side with 22.05.8.

--task-prolog/--task-epilog, --multi-prog, --bcast (--send-libs, --bcast-exclude, --compress),
--slurmd-debug and --accel-bind, each run as capture.sh ran it on the anchor
(tests/integration/reference/srun-node/, the same files from files.sh), the output compared with
job ids, pids, times and the scratch folder's name taken out.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from plurmtest import Cluster, command, start_cluster

REF = Path(__file__).resolve().parent / "reference" / "srun-node"


# slurm.conf's TaskProlog and TaskEpilog, which act only for a step that sets CONF_SCRIPTS_LOG
# (the anchor had none: the other cases see no difference).
CONF_TASK_PROLOG = """#!/bin/sh
[ -n "$CONF_SCRIPTS_LOG" ] && echo "export FROM_CONF=conf_$SLURM_PROCID"
exit 0
"""
CONF_TASK_EPILOG = """#!/bin/sh
[ -n "$CONF_SCRIPTS_LOG" ] && echo "conf epilog $SLURM_PROCID" >> "$CONF_SCRIPTS_LOG"
exit 0
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """The anchor's node shape: n1, n2 of 4 CPUs with 4 (fake) GPUs each."""
    base = tmp_path_factory.mktemp("srun_node")
    c = start_cluster(base, nodes=2, cpus=4, memory=2000, gres="gpu:4")
    try:
        c.down()
        scripts = []
        for name, body in (("task_prolog", CONF_TASK_PROLOG), ("task_epilog", CONF_TASK_EPILOG)):
            (base / name).write_text(body)
            (base / name).chmod(0o755)
            scripts.append(str(base / name))
        with open(c.conf, "a", encoding="utf-8") as handle:
            handle.write(f"TaskProlog={scripts[0]}\nTaskEpilog={scripts[1]}\n")
        c.up()
        yield c
    finally:
        c.down()


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """capture.sh's files (files.sh), in a folder the tasks may read."""
    d = tmp_path / "node"
    d.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(d, 0o755)
    subprocess.run(["bash", str(REF / "files.sh"), str(d)], check=True)
    return d


def _normal(text: str, folder: str = "") -> list[str]:
    if folder:
        text = text.replace(folder, "D")
    text = re.sub(r"/tmp/srun-node\.\w+", "D", text)
    text = re.sub(r"slurm_bcast_\d+\.\d+_", "slurm_bcast_J.S_", text)
    text = re.sub(r"\(\d+\)", "(PID)", text)
    text = re.sub(r"pid[= ]\d+", "pid PID", text)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", "TIME", text)
    return sorted(line for line in text.splitlines() if not line.startswith("srun: job "))


def _reference(name: str) -> tuple[list[str], list[str], int]:
    out, _, err = (REF / f"{name}.txt").read_text().partition("--- stderr (rc ")
    rc, _, err = err.partition(")\n")
    return _normal(out), _normal(err), int(rc)


def _run(cluster: Cluster, d: Path, *args: str) -> tuple[list[str], list[str], int]:
    proc = cluster.run(*args, cwd=d)
    return _normal(proc.stdout, str(d)), _normal(proc.stderr, str(d)), proc.returncode


def _srun_sh(cluster: Cluster, d: Path, line: str) -> tuple[list[str], list[str], int]:
    """A capture that ran ``sh -c`` around srun: the same line, plurm's srun first on PATH."""
    env = {"PATH": f"{_bin_dir()}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    proc = subprocess.run(["sh", "-c", line], cwd=d, capture_output=True, text=True, timeout=60,
                          env=dict(cluster.env, **env))
    return _normal(proc.stdout, str(d)), _normal(proc.stderr, str(d)), proc.returncode


def _bin_dir() -> str:
    found = command("srun")
    return os.path.dirname(found[0]) if len(found) == 1 else ""


# --------------------------------------------------------------------------- task prolog/epilog
def test_task_prolog_sets_the_environment_and_epilog_runs(cluster: Cluster, files: Path) -> None:
    line = ('srun -n2 -l --task-prolog=$PWD/tp.sh --task-epilog=$PWD/te.sh sh -c "echo TPVAR=\\$TPVAR '
            'HOME=\\${HOME-unset}"; cat epi.* | sort')
    assert _srun_sh(cluster, files, line) == _reference("task_prolog")


def test_slurm_conf_task_scripts_come_first_and_last(cluster: Cluster, files: Path) -> None:
    """TaskProlog before --task-prolog (which sees what it exported), --task-epilog before TaskEpilog."""
    prolog = files / "after_conf.sh"
    prolog.write_text('#!/bin/sh\necho "export SEEN=saw_$FROM_CONF"\n')
    prolog.chmod(0o755)
    epilog = files / "mine_epilog.sh"
    epilog.write_text('#!/bin/sh\necho "srun epilog $SLURM_PROCID" >> "$CONF_SCRIPTS_LOG"\n')
    epilog.chmod(0o755)
    log = files / "scripts.log"
    proc = cluster.run("srun", "-n1", "-w", "n1", f"--task-prolog={prolog}", f"--task-epilog={epilog}", "sh", "-c",
                       "echo $FROM_CONF $SEEN", cwd=files, env={"CONF_SCRIPTS_LOG": str(log)})
    assert (proc.stdout, proc.returncode) == ("conf_0 saw_conf_0\n", 0), proc.stderr
    assert log.read_text() == "srun epilog 0\nconf epilog 0\n"


@pytest.mark.parametrize("name,prolog", [("task_prolog_fails", "tpfail.sh"), ("task_prolog_missing", "nonexist")])
def test_task_prolog_failures(cluster: Cluster, files: Path, name: str, prolog: str) -> None:
    got = _run(cluster, files, "srun", "-n1", "-w", "n1", f"--task-prolog={files}/{prolog}", "echo", "ran")
    assert got == _reference(name)


# --------------------------------------------------------------------------- multi-prog
def test_multi_prog_runs_each_task_its_line(cluster: Cluster, files: Path) -> None:
    assert _run(cluster, files, "srun", "-n4", "-l", "--multi-prog", "mp.conf", "extra") == _reference("multi_prog")


@pytest.mark.parametrize("case", ["mp_missing", "mp_bad"] + [pytest.param(c, marks=pytest.mark.slow) for c in (
    "mp_gap", "mp_dup", "mp_noexe", "mp_rev", "mp_star_first")])
def test_multi_prog_file_errors(cluster: Cluster, files: Path, case: str) -> None:
    got = _run(cluster, files, "srun", "-n2", "-l", "--multi-prog", f"{case}.conf")
    assert got == _reference(f"multi_prog.{case}")


def test_multi_prog_double_quotes_are_plain(cluster: Cluster, files: Path) -> None:
    assert _run(cluster, files, "srun", "-n1", "-l", "--multi-prog", "mp_dquote.conf") == \
        _reference("multi_prog.dquote")


def test_multi_prog_unreadable_and_huge(cluster: Cluster, files: Path) -> None:
    assert _run(cluster, files, "srun", "-n1", "--multi-prog", "nonexist.conf") == _reference("multi_prog.nonexist")
    with open(files / "huge.conf", "wb") as handle:  # (sparse: 1 GiB costs nothing to make)
        handle.truncate(1 << 30)
    out, err, rc = _run(cluster, files, "srun", "-n1", "--multi-prog", "huge.conf")
    assert (out, rc) == ([], 1) and err == ["srun: error: Configuration file huge.conf is larger than 1048576 bytes"]


# --------------------------------------------------------------------------- bcast
def test_bcast_to_the_working_directory(cluster: Cluster, files: Path) -> None:
    got = _srun_sh(cluster, files, "srun -N2 -l --bcast ./prog.sh x y; ls | grep slurm_bcast")
    assert got == _reference("bcast_default")


@pytest.mark.slow
def test_bcast_to_a_folder_and_a_file(cluster: Cluster, files: Path) -> None:
    assert _srun_sh(cluster, files, "mkdir -m 777 dest; srun -N2 -l --bcast=$PWD/dest/ ./prog.sh; ls dest") == \
        _reference("bcast_dir")
    assert _run(cluster, files, "srun", "-N1", "-l", f"--bcast={files}/mine", "./prog.sh") == _reference("bcast_file")


def test_bcast_to_a_missing_folder_fails(cluster: Cluster, files: Path) -> None:
    assert _run(cluster, files, "srun", "-N2", "-l", f"--bcast={files}/nodir/", "./prog.sh") == \
        _reference("bcast_nodir")
    assert not (files / "nodir").exists()


def test_send_libs_copies_the_libraries(cluster: Cluster, files: Path) -> None:
    got = _srun_sh(cluster, files, "mkdir -m 777 dest; srun -N1 -w n1 --bcast=$PWD/dest/ --send-libs "
                                   "--bcast-exclude=NONE ./myprintenv LD_LIBRARY_PATH; ls dest/*_libs | sort")
    assert got == _reference("send_libs_binary")
    libs = next((files / "dest").glob("*_libs"))
    assert (libs / "libc.so.6").read_bytes()[:4] == b"\x7fELF"
    got = _srun_sh(cluster, files, "mkdir -m 777 dest3; srun -N1 -w n1 --bcast=$PWD/dest3/ --send-libs "
                                   "./myprintenv LD_LIBRARY_PATH; ls -a dest3/*_libs | sort")
    assert got == _reference("send_libs_binary_default_exclude")


@pytest.mark.slow
def test_send_libs_of_a_script_and_bad_words(cluster: Cluster, files: Path) -> None:
    got = _srun_sh(cluster, files, "mkdir -m 777 dest; srun -N1 -w n1 --bcast=$PWD/dest/ --send-libs "
                                   "--bcast-exclude=NONE ./ld.sh; ls dest/*_libs | sort")
    assert got == _reference("send_libs")
    assert _run(cluster, files, "srun", "-N1", "--bcast", "--compress=zlib", "./prog.sh") == \
        _reference("compress_zlib")
    assert _run(cluster, files, "srun", "-N1", "--bcast", "--send-libs=maybe", "./prog.sh") == \
        _reference("send_libs_bad")


def test_bcast_of_a_huge_file_is_refused(cluster: Cluster, files: Path) -> None:
    big = files / "big.sh"
    with open(big, "wb") as handle:
        handle.write(b"#!/bin/sh\n")
        handle.truncate(64 << 20)
    big.chmod(0o755)
    out, err, rc = _run(cluster, files, "srun", "-N1", "--bcast", "./big.sh")
    assert (out, rc) == ([], 1)
    assert err == ["srun: error: --bcast: 'D/./big.sh' and its libraries are more than 8388608 bytes, more than "
                   "plurm's launch request carries", "srun: fatal: Failed to broadcast 'D/./big.sh'. Step launch aborted."]


# --------------------------------------------------------------------------- slurmd-debug, accel-bind
def test_slurmd_debug_verbose(cluster: Cluster, files: Path) -> None:
    assert _run(cluster, files, "srun", "-N1", "-w", "n1", "--slurmd-debug=2", "true") == _reference("slurmd_debug_2")


def test_slurmd_debug_tells_a_signal(cluster: Cluster, files: Path) -> None:
    out, err, rc = _run(cluster, files, "srun", "-w", "n1", "-n2", "-l", "--slurmd-debug=2", "sh", "-c", "kill -9 $$")
    want_out, want_err, want_rc = _reference("slurmd_debug_signal")
    # (srun's own lines after a signal are another area's: tools/srun.py, srun_wait.py)
    assert (out, rc) == (want_out, want_rc)
    assert [x for x in err if "slurmstepd" in x] == [x for x in want_err if "slurmstepd" in x]


@pytest.mark.slow
def test_slurmd_debug_most(cluster: Cluster, files: Path) -> None:
    out, err, rc = _run(cluster, files, "srun", "-N1", "-w", "n1", "--slurmd-debug=bogus", "true")
    want_out, want_err, want_rc = _reference("slurmd_debug_bogus")
    assert (out, rc) == (want_out, want_rc)
    # plurmstepd writes the lines 22.05's does at debug2 for what it also does (no task/none plugin lines)
    assert set(err) <= set(want_err) and len(err) >= 10


def test_accel_bind(cluster: Cluster, files: Path) -> None:
    got = _run(cluster, files, "srun", "-w", "n1", "-n2", "-l", "--gres=gpu:2", "--accel-bind=gv", "bash", "-c",
               "echo CVD=$CUDA_VISIBLE_DEVICES")
    assert got == _reference("accel_bind_gv")
    assert _run(cluster, files, "srun", "-n1", "--accel-bind=x", "true") == _reference("accel_bind_bad")
