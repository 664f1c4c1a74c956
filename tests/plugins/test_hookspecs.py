"""Every hook is documented where it is declared, in docs/plugins.md, and
called through one typed method of the manager (datasette's test_docs idea)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from plurm.plugins import hookspecs, manager

ROOT = Path(__file__).resolve().parents[2]
HOOKS = sorted(name for name, obj in vars(hookspecs).items()
               if name.startswith("plurm_") and callable(obj))


def test_there_are_hooks():
    assert "plurm_register_accel_backends" in HOOKS


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_docstring_says_when_where_and_what(hook):
    doc = inspect.getdoc(getattr(hookspecs, hook)) or ""
    assert "When:" in doc, f"{hook}: say when and in which daemon it runs ('When: ...')"
    assert "Result:" in doc, f"{hook}: say what its result means ('Result: ...')"
    assert any(d in doc for d in ("plurmd", "plurmctld")), f"{hook}: name the daemon"


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_is_typed(hook):
    sig = inspect.signature(getattr(hookspecs, hook))
    assert sig.return_annotation is not inspect.Signature.empty


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_is_in_docs(hook):
    assert f"`{hook}" in (ROOT / "docs" / "plugins.md").read_text()


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_is_called_only_by_the_manager(hook):
    assert hook in inspect.getsource(manager.PluginManager)
    packages = ("accel", "plugins", "corescheduler", "nodeagent", "tools", "grammar")
    for path in (p for pkg in packages for p in (ROOT / pkg).rglob("*.py")):
        if path.name in ("manager.py", "hookspecs.py"):
            continue
        text = path.read_text(errors="replace")
        assert f"hook.{hook}" not in text, f"{path} calls {hook} behind the manager's back"
