"""How a command finds its cluster without being told (issue 13, point 3; wire/client.py
``conf_path``): SLURM_CONF first, then the job the command runs in (even under ``env -i``),
then PLURM_HOME's cluster, then /etc/slurm/slurm.conf with its Include lines, then the
default local cluster.

The /etc/slurm cases never touch the host's /etc: each runs in a mount namespace of its own
(``unshare -m``) where /etc is an overlay whose writes land in the test's directory and
/etc/slurm a fresh tmpfs (a host may have a real Slurm's configuration there; this one
does).  They need root for the namespace and skip without it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from plurmtest import Cluster, command, write_script

_NAMESPACE_SCRIPT = r"""
set -e
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$PRIVATE/upper,workdir=$PRIVATE/work" /etc
mkdir -p /etc/slurm
mount -t tmpfs tmpfs /etc/slurm
if [ -d "$PRIVATE/etc-slurm" ]; then cp -a "$PRIVATE/etc-slurm/." /etc/slurm/; fi
exec "$@"
"""


def _bare_env(home: Path, **extra: str) -> dict[str, str]:
    """A user's environment with nothing that names a cluster: no SLURM_*, no PLURM_HOME, and a
    HOME (so a default local cluster) of the test's own."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLURM_", "SQUEUE_", "SBATCH_", "SRUN_", "SALLOC_")) and k != "PLURM_HOME"}
    env.pop("XDG_STATE_HOME", None)
    env["HOME"] = str(home)
    env.update(extra)
    return env


def _with_private_etc(tmp_path: Path, files: dict[str, str | bytes], argv: list[str],
                      env: dict[str, str]) -> subprocess.CompletedProcess:
    """Run ``argv`` where /etc/slurm holds exactly ``files`` (name -> text), the host's /etc
    unchanged outside this one process tree."""
    if os.geteuid() != 0:
        pytest.skip("a private /etc/slurm needs a mount namespace (root)")
    if shutil.which("unshare") is None:
        pytest.skip("unshare(1) (util-linux) is not installed")
    private = tmp_path / "private-etc"
    for sub in ("upper", "work", "etc-slurm"):
        (private / sub).mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        path = private / "etc-slurm" / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        path.chmod(0o600)
    return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", _NAMESPACE_SCRIPT, "sh", *argv],
                          env=dict(env, PRIVATE=str(private)), capture_output=True, text=True, timeout=60)


def _held_job(cluster: Cluster, workdir: Path) -> str:
    """A job that stays in the queue: its id in a command's output proves which cluster answered."""
    return str(cluster.sbatch("-H", "--wrap", "true", cwd=workdir))


def _key(cluster: Cluster) -> dict[str, bytes]:
    """auth/local's key sits beside the slurm.conf a command reads (wire/client.py key_path_for):
    a site whose /etc/slurm/slurm.conf includes the cluster's file puts the key there too."""
    return {"slurm.key": (cluster.conf.parent / "slurm.key").read_bytes()}


def _squeue_job(job_id: str) -> list[str]:
    return command("squeue") + ["-h", "-j", job_id, "-o", "%i"]


# A slurm.conf whose controller nobody listens on: a command that reads it fails.
_NOWHERE = "ClusterName=nowhere\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort=9\nNodeName=x CPUs=1\n" \
           "PartitionName=p Nodes=x Default=YES\n"


def test_a_command_in_a_job_finds_the_jobs_cluster_under_env_i(cluster: Cluster, workdir: Path) -> None:
    """`env -i squeue` and a tool's pared-down subprocess environment still reach the job's
    own cluster (the nearest ancestor's starting environment), and so does `env -i srun`."""
    write_script(workdir, "bare.sh", "#!/bin/sh\n"
                 'env -i PATH="$PATH" squeue -h -j "$SLURM_JOB_ID" -o "%i %T"\n'
                 'env -i PATH="$PATH" python3 -c "import subprocess; '
                 "subprocess.run(['scontrol', 'show', 'job', '$SLURM_JOB_ID'], env={'PATH': '$PATH'}, check=True)"
                 '" | grep -o "JobState=[A-Z]*"\n'
                 'env -i PATH="$PATH" HOME="$HOME" srun -n1 -N1 echo step-ran\n')
    job_id = cluster.sbatch("bare.sh", cwd=workdir)
    assert cluster.wait_state(job_id, "COMPLETED", timeout=60)
    assert (workdir / f"slurm-{job_id}.out").read_text() == f"{job_id} RUNNING\nJobState=RUNNING\nstep-ran\n"


def test_outside_a_job_without_slurm_conf_the_default_cluster(cluster: Cluster, tmp_path: Path) -> None:
    """Outside a job, with neither SLURM_CONF nor /etc/slurm/slurm.conf, nothing is found but the
    default local cluster; a missing one is reported as Slurm reports a missing slurm.conf (its
    parser's error line), with how to start one, and exit code 1."""
    home = tmp_path / "home"
    home.mkdir()
    proc = _with_private_etc(tmp_path, {}, command("squeue") + ["-h"], _bare_env(home))
    default = home / ".local" / "state" / "plurm" / "cluster" / "slurm.conf"
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr.splitlines() == [
        f"squeue: error: s_p_parse_file: cannot stat file {default}: No such file or directory",
        "squeue: error: no cluster found (no SLURM_CONF, no /etc/slurm/slurm.conf, no local cluster): "
        "start one with `plurm cluster up`, or set SLURM_CONF",
        "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"]


def test_etc_slurm_with_its_include_lines(cluster: Cluster, workdir: Path, tmp_path: Path) -> None:
    """/etc/slurm/slurm.conf as Slurm's commands read it: an Include relative to /etc/slurm, and
    from there an absolute one (the cluster's own file)."""
    job_id = _held_job(cluster, workdir)
    try:
        files = {"slurm.conf": "# a site's top-level file\nInclude site.conf\n",
                 "site.conf": f"Include {cluster.conf}\n", **_key(cluster)}
        proc = _with_private_etc(tmp_path, files, _squeue_job(job_id), _bare_env(tmp_path))
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"{job_id}\n", "")
    finally:
        cluster.run("scancel", job_id)


def test_an_include_glob_in_etc_slurm(cluster: Cluster, workdir: Path, tmp_path: Path) -> None:
    job_id = _held_job(cluster, workdir)
    try:
        parts = [line for line in cluster.conf.read_text().splitlines() if line.strip()]
        half = len(parts) // 2
        files = {"slurm.conf": "Include /etc/slurm/part-*.conf\n",
                 "part-1.conf": "\n".join(parts[:half]) + "\n", "part-2.conf": "\n".join(parts[half:]) + "\n",
                 **_key(cluster)}
        proc = _with_private_etc(tmp_path, files, _squeue_job(job_id), _bare_env(tmp_path))
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"{job_id}\n", "")
    finally:
        cluster.run("scancel", job_id)


def test_slurm_conf_and_plurm_home_come_before_etc_slurm(cluster: Cluster, workdir: Path, tmp_path: Path) -> None:
    """An /etc/slurm/slurm.conf of another cluster (here: nobody's) is not used when SLURM_CONF
    names a file, nor when PLURM_HOME has a local cluster; it is used when neither does."""
    job_id = _held_job(cluster, workdir)
    try:
        etc = {"slurm.conf": _NOWHERE, **_key(cluster)}
        by_env = _with_private_etc(tmp_path, etc, _squeue_job(job_id),
                                   _bare_env(tmp_path, SLURM_CONF=str(cluster.conf)))
        assert (by_env.returncode, by_env.stdout) == (0, f"{job_id}\n"), by_env.stderr
        # The cluster's directory is PLURM_HOME/cluster, where `plurm cluster up` puts it.
        by_home = _with_private_etc(tmp_path, etc, _squeue_job(job_id),
                                    _bare_env(tmp_path, PLURM_HOME=str(cluster.dir.parent)))
        assert (by_home.returncode, by_home.stdout) == (0, f"{job_id}\n"), by_home.stderr
        by_etc = _with_private_etc(tmp_path, etc, _squeue_job(job_id), _bare_env(tmp_path))
        assert by_etc.returncode == 1 and by_etc.stdout == ""
        assert "Unable to contact slurm controller" in by_etc.stderr
    finally:
        cluster.run("scancel", job_id)
