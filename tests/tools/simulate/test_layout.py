"""The simulator reaches the scheduling core through one module only (engine.py), so that a
change of the core's API is one file's change."""

from __future__ import annotations

import ast
from pathlib import Path

import plurm.tools.simulate as package


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_only_the_engine_imports_the_core():
    folder = Path(package.__file__).parent
    users = {path.name for path in folder.glob("*.py")
             if any(name.startswith("plurm.corescheduler") for name in imported_modules(path))}
    assert users == {"engine.py"}
