"""A vendor's backend package (tests/accel/vendor_acme) works with no change to plurm.

The fast test makes the package discoverable the way an installed distribution
is (a ``*.dist-info`` with its entry points on the path); the slow one installs
it for real with pip into a target folder.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from plurm.accel.binding import binding_env
from plurm.accel.detect import backends_for_autodetect, detect, health_check, sample_usage
from plurm.plugins.manager import PluginManager

ACME = Path(__file__).parent / "vendor_acme"


def _use_path(monkeypatch: pytest.MonkeyPatch, *dirs: Path) -> None:
    """Put ``dirs`` on this process's path and on the probe subprocesses'."""
    for d in reversed(dirs):
        monkeypatch.syspath_prepend(str(d))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [*map(str, dirs), *filter(None, [os.environ.get("PYTHONPATH")])]))


@pytest.fixture
def acme_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = tomllib.loads((ACME / "pyproject.toml").read_text())["project"]
    site = tmp_path / "site"
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\n"
                                   f"Version: {project['version']}\n")
    eps = project["entry-points"]["plurm"]
    (info / "entry_points.txt").write_text(
        "[plurm]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()))
    _use_path(monkeypatch, site, ACME / "src")
    return site


@pytest.fixture
def acme_devices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "acme.json"
    path.write_text(json.dumps([
        {"model": "ACME Tensor-9", "serial": "A1", "memory_mb": 65536, "load": 12, "temp": 40},
        {"model": "ACME Tensor-9", "serial": "A2", "memory_mb": 65536, "load": 99, "temp": 95},
    ]))
    monkeypatch.setenv("ACME_DEVICES_FILE", str(path))
    return path


def _end_to_end(pm: PluginManager) -> None:
    assert pm.list_plugins()["acme"] == "acme-plurm"
    backend = pm.get_accel_backend("acme")
    assert (backend.vendor, backend.package) == ("acme", "acme-plurm")
    assert backends_for_autodetect("acme", manager=pm) == ["acme"]

    result = detect(backends_for_autodetect("acme", manager=pm), manager=pm)
    assert result.errors == {}
    a1, a2 = result.devices
    assert (a1.vendor, a1.uuid, a1.gres_type, a2.index) == ("acme", "ACME-A1",
                                                            "acme_tensor_9", 1)
    assert "acme" in installed_backends_of(pm)
    assert {d.uuid for d in detect("auto", manager=pm).by_backend("acme")} == {"ACME-A1",
                                                                               "ACME-A2"}
    assert binding_env([a2], manager=pm) == {"ACME_VISIBLE_DEVICES": "1"}
    assert sample_usage(result.devices, manager=pm)["ACME-A2"]["util"] == 99.0
    assert health_check(result.devices, manager=pm) == {
        "ACME-A1": "ok", "ACME-A2": "temperature 95C too high"}


def installed_backends_of(pm: PluginManager) -> list[str]:
    from plurm.accel.detect import installed_backends
    return installed_backends(pm)


def test_vendor_package_end_to_end(acme_installed, acme_devices):
    _end_to_end(PluginManager())


def test_vendor_backend_without_its_driver_is_skipped_under_auto(acme_installed, monkeypatch):
    monkeypatch.delenv("ACME_DEVICES_FILE", raising=False)
    pm = PluginManager()
    assert "acme" in detect("auto", manager=pm).skipped
    assert "no ACME driver" in detect(["acme"], manager=pm).errors["acme"]


def test_vendor_package_can_be_blocked(acme_installed, acme_devices, monkeypatch):
    monkeypatch.setenv("PLURM_BLOCKED_PLUGINS", "acme")
    pm = PluginManager()
    assert "acme" not in pm.accel_backend_names()


@pytest.mark.slow
def test_pip_installed_vendor_package(tmp_path, acme_devices, monkeypatch):
    """Install the package with pip (build isolation fetches setuptools) and use it."""
    src = tmp_path / "src"
    shutil.copytree(ACME, src, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    target = tmp_path / "target"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                           "--target", str(target), str(src)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"pip could not build the package here: {proc.stderr[-500:]}")
    _use_path(monkeypatch, target)
    _end_to_end(PluginManager())
