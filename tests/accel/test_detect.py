"""Detection's guarantees: never raise, never hang, cache; AutoDetect mapping."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

from plurm.accel.detect import (
    backends_for_autodetect,
    check_against_conf,
    detect,
    installed_backends,
)
from plurm.accel.model import Device
from plurm.grammar.gresconf import parse_gres_conf_text
from plurm.plugins.hookspecs import hookimpl
from plurm.plugins.manager import UnknownPluginError
from plurm.plugins.types import AccelBackend

HELPERS = Path(__file__).parent / "helpers"


@pytest.fixture
def odd_backends(pm, monkeypatch):
    """Register backends whose functions misbehave, from an importable module."""
    monkeypatch.syspath_prepend(str(HELPERS))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        filter(None, [str(HELPERS), os.environ.get("PYTHONPATH")])))
    mod = "plurm_probe_helpers"

    class Odd:
        @hookimpl
        def plurm_register_accel_backends(self):
            return [AccelBackend(name=n, vendor="test", detect=f"{mod}:{n}",
                                 binding_env=f"{mod}:{n}", in_auto=False)
                    for n in ("raises", "exits", "prints_to_stdout", "counts_calls")]

    pm.register(Odd(), name="odd")
    return pm


def test_python_errors_become_error_entries(odd_backends):
    result = detect(["raises", "exits", "prints_to_stdout"], manager=odd_backends)
    assert result.errors["raises"] == "RuntimeError: vendor library said no"
    assert "exited with status 3" in result.errors["exits"]
    assert "prints_to_stdout" not in result.errors  # stdout chatter does not break JSON


def test_unknown_backend_lists_valid_names(pm):
    result = detect(["nvidia"], manager=pm)
    assert result.errors["nvidia"] == ("UnknownPluginError: unknown accelerator backend "
                                       "'nvidia' (valid: amdsmi, nvml, opencl, static)")


def test_results_are_cached_per_process(odd_backends, tmp_path):
    counter = tmp_path / "calls"
    opts = {"counter": str(counter)}
    detect(["counts_calls"], options=opts, manager=odd_backends)
    detect(["counts_calls"], options=opts, manager=odd_backends)
    assert counter.read_text() == "x"
    detect(["counts_calls"], options=opts, refresh=True, manager=odd_backends)
    assert counter.read_text() == "xx"


def test_auto_uses_installed_backends_only(pm):
    names = installed_backends(pm)
    assert "static" not in names  # needs configuration, not hardware
    for name in names:
        assert all(find_spec(m) for m in pm.get_accel_backend(name).requires)
    result = detect("auto", manager=pm)
    assert set(result.errors) | set(result.skipped) | {d.backend for d in result.devices} \
        <= set(names)


@pytest.mark.parametrize("value, expected", [
    ("nvml", ["nvml"]), ("NVML", ["nvml"]), ("nvidia", ["nvml"]), ("rsmi", ["amdsmi"]),
    ("oneapi", ["opencl"]), ("opencl", ["opencl"]), ("off", []), ("nrt", []),
    ("auto", "auto"), (None, "auto"), ("static", ["static"]),
])
def test_autodetect_values(pm, value, expected):
    assert backends_for_autodetect(value, manager=pm) == expected


def test_unknown_autodetect_value(pm):
    with pytest.raises(UnknownPluginError, match="valid: amdsmi, nvml, opencl, static"):
        backends_for_autodetect("cuda", manager=pm)


def test_probe_command_line(tmp_path):
    """``python -m plurm.accel.probe BACKEND`` finds the backend through the plugins."""
    conf = tmp_path / "gres.conf"
    conf.write_text("Name=gpu File=/dev/null\n")
    request = json.dumps({"options": {"gres_conf": str(conf), "node": "n1"}})
    out = subprocess.run([sys.executable, "-m", "plurm.accel.probe", "static"], input=request,
                         capture_output=True, text=True, timeout=60, check=True).stdout
    reply = json.loads(out)
    assert reply["ok"] and reply["result"][0]["device_file"] == "/dev/null"
    bad = subprocess.run([sys.executable, "-m", "plurm.accel.probe", "nope"], input="{}",
                         capture_output=True, text=True, timeout=60).stdout
    assert json.loads(bad)["ok"] is False


def _dev(i, model="NVIDIA H200", f=None):
    return Device(vendor="nvidia", model=model, uuid=f"GPU-{i}", index=i, backend="nvml",
                  device_file=f)


def test_check_against_conf_files_and_types():
    conf = parse_gres_conf_text(
        "NodeName=n1 Name=gpu Type=h200 File=/dev/nvidia[0-1]\n"
        "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia[2-3]\n"
        "NodeName=n1 Name=nic Count=2\n")
    found = [_dev(0, f="/dev/nvidia0"), _dev(1, f="/dev/nvidia1"),
             _dev(2, "NVIDIA A100-SXM4-80GB", "/dev/nvidia2")]
    assert check_against_conf(found, conf.entries, "n1") == [
        "gres/gpu count reported lower than configured (3 < 4)",
        "gres/gpu:a100 count reported lower than configured (1 < 2)",
        "gres/gpu file /dev/nvidia3 not found by detection",
    ]
    assert check_against_conf([], conf.entries, "n1", gres_name="nic") == [
        "gres/nic count reported lower than configured (0 < 2)"]
