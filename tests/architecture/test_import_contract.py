"""The import contract (pyproject.toml [tool.importlinter]) holds, and it can fail.

Folders import one way (tools -> corescheduler | nodeagent -> wire | common -> accel ->
plugins -> grammar) with no cycles between siblings, and the scheduling core and the
service layer import nothing that does I/O (store, clock, user database, sockets).  The second test plants a wrong-way
import in a copy of the package and checks that the same contract then breaks, so a green
first test means something.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _lint(package_parent: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(package_parent))
    code = ("import sys; from importlinter.cli import lint_imports_command; "
            "sys.argv = ['lint-imports', sys.argv[1]]; lint_imports_command()")
    return subprocess.run([sys.executable, "-c", code, str(ROOT / "pyproject.toml")], cwd=package_parent,
                          env=env, capture_output=True, text=True, timeout=120)


def _copy_package(tmp_path: Path) -> Path:
    target = tmp_path / "plurm"
    shutil.copytree(ROOT, target, ignore=shutil.ignore_patterns(".git", "tests", "build", "*.so", "*.c",
                                                                "__pycache__", "*.egg-info"))
    return target


def test_the_tree_keeps_the_contract(tmp_path: Path) -> None:
    package = _copy_package(tmp_path)
    result = _lint(package.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 kept, 0 broken" in result.stdout


def test_a_wrong_way_import_breaks_the_layers(tmp_path: Path) -> None:
    package = _copy_package(tmp_path)
    hostlist = package / "grammar" / "hostlist.py"
    hostlist.write_text(hostlist.read_text() + "\nfrom plurm.tools import squeue  # wrong way: grammar -> tools\n")
    result = _lint(package.parent)
    assert result.returncode != 0
    assert "plurm.grammar.hostlist -> plurm.tools.squeue" in result.stdout


def test_a_cycle_between_siblings_breaks_the_contract(tmp_path: Path) -> None:
    package = _copy_package(tmp_path)
    # Two modules of one layer that import each other: the layers allow it, acyclic_siblings not.
    (package / "corescheduler" / "cycle_a.py").write_text("from plurm.corescheduler import cycle_b\n")
    (package / "corescheduler" / "cycle_b.py").write_text("from plurm.corescheduler import cycle_a\n")
    result = _lint(package.parent)
    assert result.returncode != 0
    assert "No import cycles" in result.stdout and "BROKEN" in result.stdout


def test_the_clock_in_the_core_breaks_the_purity_contract(tmp_path: Path) -> None:
    package = _copy_package(tmp_path)
    core = package / "corescheduler" / "core_nodes.py"
    core.write_text(core.read_text().replace("import logging\n", "import logging\nimport time\n", 1))
    result = _lint(package.parent)
    assert result.returncode != 0
    assert "plurm.corescheduler.core_nodes -> time" in result.stdout
