"""Fixtures for the accelerator tests: fake vendor libraries built with gcc.

Only the GPU is fake.  The tests compile small C libraries that stand in for
libnvidia-ml.so.1 and libamd_smi.so, answer from an inventory the test writes,
and are loaded by the real pynvml and amdsmi packages in plurm's real probe
subprocess (found through LD_LIBRARY_PATH and ROCM_PATH, as on a real node).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

from plurm.accel import detect as accel_detect
from plurm.plugins.manager import PluginManager, reset_plugin_manager

FAKES = Path(__file__).parent / "fakes"
CFLAGS = ["-shared", "-fPIC", "-O1", "-Wall", "-Wno-format-truncation"]


def _compile(sources: list[Path], output: Path) -> None:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the fake vendor library")
    output.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["gcc", *CFLAGS, "-o", str(output), *map(str, sources)], check=True,
                   capture_output=True, text=True)


@dataclass
class FakeLibrary:
    """A built fake library plus the inventory file it reads."""

    env_var: str            # names the inventory file for the library
    config: Path
    env: dict[str, str] = field(default_factory=dict)  # what makes the library findable

    def write(self, devices: list[dict[str, Any]], *, hang: str | None = None,
              crash: str | None = None, init_error: int | None = None) -> None:
        """Write the inventory: one ``device k=v;k=v`` line per device."""
        lines = []
        for dev in devices:
            for k, v in dev.items():
                if ";" in str(v) or "\n" in str(v):
                    raise ValueError(f"{k}={v!r}: no ';' or newline in fake values")
            lines.append("device " + ";".join(
                f"{k}={','.join(map(str, v)) if isinstance(v, (list, tuple)) else v}"
                for k, v in dev.items()))
        if hang:
            lines.append(f"hang {hang}")
        if crash:
            lines.append(f"crash {crash}")
        if init_error is not None:
            lines.append(f"init_error {init_error}")
        self.config.write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="session")
def nvml_libdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    libdir = tmp_path_factory.mktemp("fake-nvml")
    _compile([FAKES / "fake_nvml.c"], libdir / "libnvidia-ml.so.1")
    return libdir


def _amdsmi_symbols() -> list[str]:
    """Every libamd_smi symbol the installed amdsmi package binds at import.

    Read from the package's wrapper source (importing it needs the library)."""
    spec = find_spec("amdsmi")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("the amdsmi package is not installed (pip install amdsmi)")
    wrapper = Path(list(spec.submodule_search_locations)[0]) / "amdsmi_wrapper.py"
    return sorted(set(re.findall(r"_libraries\['libamd_smi\.so'\]\.(\w+)", wrapper.read_text())))


@pytest.fixture(scope="session")
def amdsmi_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fake ROCm tree: ROCM_PATH/lib/libamd_smi.so."""
    root = tmp_path_factory.mktemp("fake-rocm")
    source = FAKES / "fake_amdsmi.c"
    defined = set(re.findall(r"^int (amdsmi_\w+)\(", source.read_text(), re.M))
    stubs = root / "stubs.c"
    stubs.write_text("/* generated: symbols the fake does not implement */\n" + "".join(
        f"int {name}(void) {{ return 2; /* AMDSMI_STATUS_NOT_SUPPORTED */ }}\n"
        for name in _amdsmi_symbols() if name not in defined))
    _compile([source, stubs], root / "lib" / "libamd_smi.so")
    return root


@pytest.fixture
def fake_nvml(nvml_libdir: Path, tmp_path: Path,
              monkeypatch: pytest.MonkeyPatch) -> FakeLibrary:
    if find_spec("pynvml") is None:
        pytest.skip("pynvml is not installed (pip install nvidia-ml-py)")
    lib = FakeLibrary("FAKE_NVML_CONFIG", tmp_path / "nvml.conf",
                      {"LD_LIBRARY_PATH": str(nvml_libdir)})
    lib.write([])
    monkeypatch.setenv("LD_LIBRARY_PATH", str(nvml_libdir))
    monkeypatch.setenv(lib.env_var, str(lib.config))
    return lib


@pytest.fixture
def fake_amdsmi(amdsmi_root: Path, tmp_path: Path,
                monkeypatch: pytest.MonkeyPatch) -> FakeLibrary:
    lib = FakeLibrary("FAKE_AMDSMI_CONFIG", tmp_path / "amdsmi.conf",
                      {"ROCM_PATH": str(amdsmi_root)})
    lib.write([])
    monkeypatch.setenv("ROCM_PATH", str(amdsmi_root))
    monkeypatch.delenv("ROCM_HOME", raising=False)
    monkeypatch.setenv(lib.env_var, str(lib.config))
    return lib


@pytest.fixture
def pm() -> PluginManager:
    """Built-in backends only, whatever is installed in the environment."""
    return PluginManager(autoload=False)


@pytest.fixture(autouse=True)
def _fresh_state() -> Iterator[None]:
    accel_detect.clear_cache()
    reset_plugin_manager()
    yield
    accel_detect.clear_cache()
    reset_plugin_manager()


H200 = {"name": "NVIDIA H200", "mem_total_mb": 143771, "mem_used_mb": 1024, "util": 37,
        "temp": 45}


def _h200s(n: int, **overrides: Any) -> list[dict[str, Any]]:
    return [{**H200, "uuid": f"GPU-{i:08x}-0000-0000-0000-000000000000",
             "bus": f"00000000:{0x17 + i:02X}:00.0", "minor": i, "numa": i // 2, **overrides}
            for i in range(n)]


@pytest.fixture
def h200s() -> Any:
    """``h200s(n, **fields)``: inventory lines for n H200s with distinct UUIDs and buses."""
    return _h200s
