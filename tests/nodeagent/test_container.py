"""``--container=<bundle>`` through an OCI runtime (nodeagent/container.py, issue 14 item 8).

With oci.conf beside slurm.conf naming ``RunTimeRun=`` (runc here: ``apt-get install runc``
when root, as tests/debpkg.py does), srun's tasks run inside the bundle: their own PID
namespace (the task is PID 1), the bundle's root file system, the job's variables.  Without
oci.conf the job runs uncontained, as Slurm 22.05 does (tests/tools/test_options_rest.py).
The pattern and config.json rewriting are also checked without a runtime.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from plurm.nodeagent import container
from plurmtest import Cluster, start_cluster

_BINDS = ("/usr", "/bin", "/lib", "/lib64", "/etc")


def _runc() -> str:
    found = shutil.which("runc")
    if found is None and os.geteuid() == 0:
        from debpkg import apt_install

        apt_install("runc")
        found = shutil.which("runc")
    if found is None:
        pytest.skip("no runc (and not root to install it)")
    return found


def make_bundle(path: Path, runc: str) -> Path:
    """A bundle whose rootfs is empty mount points for the host's read-only system directories."""
    path.mkdir(parents=True)
    subprocess.run([runc, "spec"], cwd=path, check=True)
    config = json.loads((path / "config.json").read_text())
    config["root"] = {"path": "rootfs", "readonly": True}
    config["process"].update(terminal=False, args=["true"])
    config["linux"].pop("resources", None)
    for d in _BINDS:
        if os.path.isdir(d):
            (path / "rootfs" / d.lstrip("/")).mkdir(parents=True)
            config["mounts"].append({"destination": d, "type": "bind", "source": d, "options": ["rbind", "ro"]})
    (path / "config.json").write_text(json.dumps(config))
    return path


def test_task_bundle_and_pattern(tmp_path: Path) -> None:
    bundle = tmp_path / "b"
    (bundle / "rootfs" / "work").mkdir(parents=True)
    (bundle / "config.json").write_text(json.dumps({"process": {"args": ["x"], "cwd": "/"},
                                                    "root": {"path": "rootfs"}}))
    conf = {"runtimerun": 'runc --root=/run/r run --bundle %b "%n.%u.%j.%s.%t" -- %@ 100%%'}
    argv = container.task_argv(conf, ["echo", "a b"], {"A": "1"}, bundle=str(bundle), work_dir="/work",
                               spool=str(tmp_path / "spool"), job_id=7, step_id=0, task_id=3, node="n1",
                               user="alice", uid=1001)
    own = tmp_path / "spool" / "oci-job7-0" / "task-3"
    assert argv == ["runc", "--root=/run/r", "run", "--bundle", str(own), "n1.alice.7.0.3", "--", "echo", "a b",
                    "100%"]
    written = json.loads((own / "config.json").read_text())
    assert written["process"] == {"args": ["echo", "a b"], "cwd": "/work", "env": ["A=1"], "terminal": False}
    assert written["root"]["path"] == str(bundle / "rootfs")
    with pytest.raises(container.ContainerError, match="config.json"):
        container.task_argv(conf, ["true"], {}, bundle=str(tmp_path / "none"), work_dir="/", spool=str(tmp_path),
                            job_id=1, step_id=0, task_id=0, node="n1", user="a", uid=0)
    secret = tmp_path / "secret"  # a bundle its owner may not read: never read for them (as root)
    secret.mkdir()
    (secret / "config.json").write_text("{}")
    (secret / "config.json").chmod(0o600)
    with pytest.raises(container.ContainerError, match="Permission denied"):
        container.task_argv(conf, ["true"], {}, bundle=str(secret), work_dir="/", spool=str(tmp_path),
                            job_id=1, step_id=0, task_id=0, node="n1", user="a", uid=os.geteuid() + 4242)
    with pytest.raises(container.ContainerError, match="RunTimeRun"):
        container.task_argv({"runtimecreate": "x"}, ["true"], {}, bundle=str(bundle), work_dir="/",
                            spool=str(tmp_path), job_id=1, step_id=0, task_id=0, node="n1", user="a", uid=0)


def test_oci_conf_lines(tmp_path: Path) -> None:
    assert container.load_oci_conf(str(tmp_path)) is None
    (tmp_path / "oci.conf").write_text('# site\nRunTimeRun="crun run --bundle %b %n.%j"\nbogus line\nNoSuchKey=1\n'
                                       "CreateEnvFile=newline\n")
    assert container.load_oci_conf(str(tmp_path)) == {"runtimerun": "crun run --bundle %b %n.%j",
                                                      "createenvfile": "newline"}


@pytest.fixture(scope="module")
def oci_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Path]]:
    if os.geteuid() != 0:
        pytest.skip("runs the OCI runtime as root (a rootless runtime needs user namespaces set up)")
    runc = _runc()
    base = tmp_path_factory.mktemp("oci")
    bundle = make_bundle(base / "bundle", runc)
    probe = subprocess.run([runc, "--root", str(base / "probe"), "run", "--no-pivot", "--bundle", str(bundle),
                            "probe"], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    if probe.returncode != 0:
        pytest.skip(f"runc cannot run a container on this host: {probe.stderr[-300:]}")
    cluster = start_cluster(base, nodes=1, cpus=2, memory=2000)
    (cluster.conf.parent / "oci.conf").write_text(
        f'RunTimeRun="{runc} --root={base}/runc run --no-pivot --bundle %b %n.%u.%j.%s.%t"\n')
    try:
        yield cluster, bundle
    finally:
        cluster.down()


def test_srun_tasks_run_in_the_container(oci_cluster: tuple[Cluster, Path], tmp_path: Path) -> None:
    cluster, bundle = oci_cluster
    proc = cluster.run("srun", "-n2", f"--container={bundle}", "sh", "-c",
                       'echo "pid=$$ task=$SLURM_PROCID job=$SLURM_JOB_ID container=$SLURM_CONTAINER"; ls /',
                       cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    tasks = sorted(line for line in lines if line.startswith("pid="))
    assert [t.split()[0] for t in tasks] == ["pid=1", "pid=1"]  # each task is its container's first process
    assert {t.split()[1] for t in tasks} == {"task=0", "task=1"} and all(f"container={bundle}" in t for t in tasks)
    listed = {line for line in lines if not line.startswith("pid=")}
    assert {"usr", "bin", "etc"} <= listed and "work" not in listed and "tmp" not in listed  # the bundle's root
    plain = cluster.run("srun", "sh", "-c", "echo pid=$$", cwd=tmp_path)  # without --container: not contained
    assert plain.returncode == 0 and plain.stdout.strip() != "pid=1"
