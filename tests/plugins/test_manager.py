"""The plugin manager: built-ins through the hooks, entry points, and the
environment switches."""

from __future__ import annotations

import logging

import pluggy
import pytest

from plurm.plugins.hookspecs import hookimpl
from plurm.plugins.manager import (
    DuplicatePluginError,
    PluginManager,
    UnknownPluginError,
    get_plugin_manager,
    reset_plugin_manager,
)
from plurm.plugins.types import AccelBackend, callable_path, resolve

BUILTIN = ["amdsmi", "nvml", "opencl", "static"]


def test_builtins_register_through_the_hooks():
    pm = PluginManager(autoload=False)
    assert pm.accel_backend_names() == BUILTIN
    assert pm.list_plugins() == {"plurm.accel.backends": "plurm", "plurm.plugins.priority": "plurm",
                                 "plurm.plugins.preempt": "plurm", "plurm.plugins.auth": "plurm"}
    assert list(pm.get_auth_types()) == ["local", "munge"]
    assert list(pm.get_preempt_plugins()) == ["none", "partition_prio", "qos"]
    assert list(pm.get_priority_plugins()) == ["basic", "multifactor"]
    assert {b.package for b in pm.get_accel_backends().values()} == {"plurm"}


def test_builtins_are_trylast():
    import plurm.accel.backends as builtin
    # HookimplMarker("plurm") keeps a hookimpl's options on the function.
    assert builtin.plurm_register_accel_backends.plurm_impl["trylast"] is True


def test_entry_points_load_and_broken_ones_are_skipped(fake_dists, caplog):
    caplog.set_level(logging.WARNING, logger="plurm.plugins")
    pm = PluginManager()
    names = pm.accel_backend_names()
    assert "goodaccel" in names and "blockedaccel" in names
    assert pm.get_accel_backend("goodaccel").package == "plurm-test-plugins"
    assert pm.list_plugins()["good"] == "plurm-test-plugins"
    assert "broken" not in pm.list_plugins()
    assert "ModuleNotFoundError" in pm.load_errors["broken"]
    assert any("broken" in r.getMessage() and "plurm-test-plugins" in r.getMessage()
               for r in caplog.records)


def test_blocked_plugins_env(fake_dists, monkeypatch):
    monkeypatch.setenv("PLURM_BLOCKED_PLUGINS", "blocked, broken")
    pm = PluginManager()
    assert "blockedaccel" not in pm.accel_backend_names()
    assert "goodaccel" in pm.accel_backend_names()
    assert pm.load_errors == {}  # a blocked plugin is not even imported


def test_a_builtin_can_be_blocked(monkeypatch):
    monkeypatch.setenv("PLURM_BLOCKED_PLUGINS", "plurm.accel.backends")
    assert PluginManager(autoload=False).accel_backend_names() == []


def test_disable_autoload_env(fake_dists, monkeypatch):
    monkeypatch.setenv("PLURM_DISABLE_PLUGIN_AUTOLOAD", "1")
    assert PluginManager().accel_backend_names() == BUILTIN


def test_duplicate_names_name_their_packages(dup_dist):
    pm = PluginManager()
    with pytest.raises(DuplicatePluginError) as info:
        pm.get_accel_backends()
    assert "'nvml' from plurm, plurm-test-dup" in str(info.value)


def test_unknown_name_lists_valid_names():
    pm = PluginManager(autoload=False)
    with pytest.raises(UnknownPluginError) as info:
        pm.get_accel_backend("cuda")
    assert str(info.value) == ("unknown accelerator backend 'cuda' "
                               "(valid: amdsmi, nvml, opencl, static)")


def test_misspelled_hook_fails_at_registration():
    class Typo:
        @hookimpl
        def plurm_register_accel_backend(self):  # missing "s"
            return []

    pm = PluginManager(autoload=False)
    with pytest.raises(pluggy.PluginValidationError):
        pm.register(Typo(), name="typo")


def test_a_raising_hook_is_skipped_alone(caplog):
    class Raises:
        @hookimpl
        def plurm_register_accel_backends(self):
            raise RuntimeError("boom")

    class NotARecord:
        @hookimpl
        def plurm_register_accel_backends(self):
            return ["not a record"]

    pm = PluginManager(autoload=False)
    pm.register(Raises(), name="raises")
    pm.register(NotARecord(), name="notarecord")
    assert pm.accel_backend_names() == BUILTIN
    assert "RuntimeError: boom" in pm.load_errors["raises"]
    assert "not an AccelBackend" in caplog.text


def test_third_party_record_and_unregister():
    class Acme:
        @hookimpl
        def plurm_register_accel_backends(self):
            return [AccelBackend(name="acme", vendor="acme", detect="m:f", binding_env="m:g")]

    pm = PluginManager(autoload=False)
    pm.register(Acme(), name="acme", package="acme-plurm")
    assert pm.get_accel_backend("acme").package == "acme-plurm"
    pm.unregister("acme")
    assert "acme" not in pm.accel_backend_names()


def test_trace_env_logs_hook_calls(monkeypatch, caplog):
    monkeypatch.setenv("PLURM_TRACE_PLUGINS", "1")
    caplog.set_level(logging.DEBUG, logger="plurm.plugins")
    PluginManager(autoload=False).get_accel_backends()
    assert "plurm_register_accel_backends from plurm.accel.backends" in caplog.text


def test_process_manager_is_shared_and_resettable():
    first = get_plugin_manager()
    assert get_plugin_manager() is first
    reset_plugin_manager()
    assert get_plugin_manager() is not first


def test_record_validation_and_paths():
    with pytest.raises(TypeError):
        AccelBackend(name="x", vendor="v", detect=42, binding_env="m:f")  # type: ignore[arg-type]
    assert callable_path(resolve) == "plurm.plugins.types:resolve"
    assert resolve("plurm.plugins.types:resolve") is resolve
    with pytest.raises(ValueError):
        callable_path(lambda options: [])
