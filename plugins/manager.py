"""The plugin manager: the one place that calls hooks.

``PluginManager`` wraps a ``pluggy.PluginManager`` and offers one typed method
per hook; the rest of plurm never touches ``pm.hook``.  It registers the
built-in plugins through the same hooks a third-party package uses, loads the
``plurm`` entry points (a plugin that fails to import is logged and skipped),
and calls ``check_pending()`` so that a misspelled hook implementation is an
error at start-up rather than a silently ignored function.

Environment switches (read when a manager is built):

* ``PLURM_DISABLE_PLUGIN_AUTOLOAD=1``: load no entry points (built-ins only).
* ``PLURM_BLOCKED_PLUGINS=a,b``: never load or register these plugin names
  (entry point names; built-ins by their module name).
* ``PLURM_TRACE_PLUGINS=1``: log every hook call and result at DEBUG level on
  the ``plurm.plugins`` logger.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from collections.abc import Iterable
from importlib import metadata
from typing import Any

import pluggy

from plurm.plugins import hookspecs
from plurm.plugins.hookspecs import ENTRY_POINT_GROUP, PROJECT
from plurm.plugins.types import AccelBackend, AuthTypePlugin, FreezePolicyPlugin, PreemptPlugin, PriorityPlugin

__all__ = [
    "BUILTIN_PLUGINS", "DuplicatePluginError", "PluginError", "PluginManager",
    "UnknownPluginError", "get_plugin_manager", "reset_plugin_manager",
]

log = logging.getLogger("plurm.plugins")

# Modules holding plurm's own hook implementations (all ``trylast=True``).
BUILTIN_PLUGINS: tuple[str, ...] = ("plurm.accel.backends", "plurm.plugins.priority", "plurm.plugins.preempt",
                                     "plurm.plugins.auth")
BUILTIN_PACKAGE = "plurm"


class PluginError(Exception):
    """A plugin problem that the configuration must fix."""


class UnknownPluginError(PluginError, LookupError):
    """A configured name matches no registered implementation."""


class DuplicatePluginError(PluginError):
    """Two plugins registered the same name."""


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


def _env_list(name: str) -> list[str]:
    return [p.strip() for p in os.environ.get(name, "").split(",") if p.strip()]


class PluginManager:
    """Typed facade over pluggy for plurm's hooks."""

    def __init__(self, *, autoload: bool | None = None, blocked: Iterable[str] | None = None,
                 trace: bool | None = None,
                 builtins: Iterable[str] = BUILTIN_PLUGINS) -> None:
        self._pm = pluggy.PluginManager(PROJECT)
        self._pm.add_hookspecs(hookspecs)
        # plugin name -> distribution (package) that supplied it
        self._packages: dict[str, str] = {}
        # plugin name -> why it could not be loaded
        self.load_errors: dict[str, str] = {}
        self._accel: dict[str, AccelBackend] | None = None
        self._priority: dict[str, PriorityPlugin] | None = None
        self._preempt: dict[str, PreemptPlugin] | None = None
        self._auth: dict[str, AuthTypePlugin] | None = None
        self._freeze: dict[str, FreezePolicyPlugin] | None = None
        self._trace = _env_flag("PLURM_TRACE_PLUGINS") if trace is None else trace
        if self._trace:
            self._pm.trace.root.setwriter(lambda msg: log.debug("%s", msg.rstrip()))
            self._pm.enable_tracing()
        for name in _env_list("PLURM_BLOCKED_PLUGINS") if blocked is None else blocked:
            self._pm.set_blocked(name)
        for module in builtins:
            self._register_builtin(module)
        if (not _env_flag("PLURM_DISABLE_PLUGIN_AUTOLOAD")) if autoload is None else autoload:
            self.load_entrypoints()
        self._pm.check_pending()

    # -- registration -------------------------------------------------------

    def _register_builtin(self, module_name: str) -> None:
        if self._pm.is_blocked(module_name):
            log.info("built-in plugin %s is blocked", module_name)
            return
        module = importlib.import_module(module_name)
        self._pm.register(module, name=module_name)
        self._packages[module_name] = BUILTIN_PACKAGE

    def load_entrypoints(self, group: str = ENTRY_POINT_GROUP) -> int:
        """Load and register every entry point in ``group``; return how many loaded.

        Unlike pluggy's ``load_setuptools_entrypoints`` one broken package does not
        stop the others: its error is logged and kept in ``load_errors``.
        """
        count = 0
        for ep in metadata.entry_points(group=group):
            if self._pm.is_blocked(ep.name):
                log.info("plugin %s is blocked (PLURM_BLOCKED_PLUGINS)", ep.name)
                continue
            if self._pm.get_plugin(ep.name) is not None or ep.name in self.load_errors:
                continue  # the same distribution seen twice on sys.path
            package = ep.dist.name if ep.dist is not None else ep.value
            try:
                plugin = ep.load()
            except Exception as exc:  # ImportError, SyntaxError, anything at import time
                self.load_errors[ep.name] = f"{type(exc).__name__}: {exc}"
                log.warning("plugin %s (from %s) failed to load and is skipped: %s: %s",
                            ep.name, package, type(exc).__name__, exc)
                continue
            self._pm.register(plugin, name=ep.name)
            self._packages[ep.name] = package
            count += 1
        self._accel = None
        self._priority = None
        self._preempt = None
        self._freeze = None
        return count

    def register(self, plugin: object, name: str | None = None,
                 package: str | None = None) -> str | None:
        """Register a plugin object or module (tests, embedding applications).

        Returns its name, or None when the name is blocked.
        """
        registered = self._pm.register(plugin, name=name)
        if registered is not None:
            self._packages[registered] = package or registered
            self._pm.check_pending()
        self._accel = None
        self._priority = None
        self._preempt = None
        self._freeze = None
        return registered

    def unregister(self, name: str) -> None:
        self._pm.unregister(name=name)
        self._packages.pop(name, None)
        self._accel = None
        self._priority = None
        self._preempt = None
        self._freeze = None

    def list_plugins(self) -> dict[str, str]:
        """Registered plugin name -> the package that supplied it."""
        return {name: self._packages.get(name, name)
                for name, _ in self._pm.list_name_plugin()}

    # -- hook calls -----------------------------------------------------------

    def _collect(self, hook_name: str) -> list[tuple[str, Any]]:
        """Call a registration hook plugin by plugin, so each record is attributed
        to the package that supplied it and one raising plugin is skipped alone."""
        results: list[tuple[str, Any]] = []
        caller = getattr(self._pm.hook, hook_name)
        for impl in caller.get_hookimpls():
            package = self._packages.get(impl.plugin_name, impl.plugin_name)
            try:
                value = impl.function()
            except Exception as exc:
                self.load_errors[impl.plugin_name] = f"{hook_name}: {type(exc).__name__}: {exc}"
                log.warning("plugin %s (from %s) failed in %s and is skipped: %s: %s",
                            impl.plugin_name, package, hook_name, type(exc).__name__, exc)
                continue
            if self._trace:
                log.debug("%s from %s returned %r", hook_name, impl.plugin_name, value)
            for item in value or ():
                results.append((package, item))
        return results

    def _named_records(self, hook_name: str, record_type: type, kind: str) -> dict[str, Any]:
        """The records of a registration hook by name; a duplicate name is an error
        naming the packages that supplied it, a record of the wrong type is skipped."""
        found: dict[str, Any] = {}
        suppliers: dict[str, list[str]] = {}
        for package, record in self._collect(hook_name):
            if not isinstance(record, record_type):
                log.warning("plugin package %s returned %r from %s, not an %s record; ignored",
                            package, record, hook_name, record_type.__name__)
                continue
            suppliers.setdefault(record.name, []).append(package)
            found.setdefault(record.name, _with_package(record, package))
        dups = {n: p for n, p in suppliers.items() if len(p) > 1}
        if dups:
            detail = "; ".join(f"{n!r} from {', '.join(sorted(p))}" for n, p in sorted(dups.items()))
            raise DuplicatePluginError(f"{kind} name registered more than once: {detail}")
        return dict(sorted(found.items()))

    def get_accel_backends(self) -> dict[str, AccelBackend]:
        """Every registered accelerator backend, by name (``plurm_register_accel_backends``).

        Raises ``DuplicatePluginError`` naming the packages when two plugins register
        the same backend name.
        """
        if self._accel is None:
            self._accel = self._named_records("plurm_register_accel_backends", AccelBackend,
                                              "accelerator backend")
        return self._accel

    def get_priority_plugins(self) -> dict[str, PriorityPlugin]:
        """Every registered priority plugin, by name (``plurm_register_priority_plugins``)."""
        if self._priority is None:
            self._priority = self._named_records("plurm_register_priority_plugins", PriorityPlugin,
                                                 "priority plugin")
        return self._priority

    def get_preempt_plugins(self) -> dict[str, PreemptPlugin]:
        """Every registered preemption policy, by name (``plurm_register_preempt_plugins``)."""
        if self._preempt is None:
            self._preempt = self._named_records("plurm_register_preempt_plugins", PreemptPlugin,
                                                "preemption plugin")
        return self._preempt

    def get_preempt_plugin(self, name: str) -> PreemptPlugin:
        """The policy that slurm.conf's ``PreemptType=preempt/NAME`` selects."""
        return _selected(self.get_preempt_plugins(), name, "PreemptType", "preempt")

    def get_auth_types(self) -> dict[str, AuthTypePlugin]:
        """Every registered credential plugin, by name (``plurm_register_auth_types``)."""
        if self._auth is None:
            self._auth = self._named_records("plurm_register_auth_types", AuthTypePlugin, "AuthType plugin")
        return self._auth

    def get_auth_type(self, name: str) -> AuthTypePlugin:
        """The plugin that slurm.conf's ``AuthType=auth/NAME`` selects."""
        return _selected(self.get_auth_types(), name, "AuthType", "auth")

    def get_freeze_policies(self) -> dict[str, FreezePolicyPlugin]:
        """Every registered freeze policy, by name (``plurm_register_freeze_policies``)."""
        if self._freeze is None:
            self._freeze = self._named_records("plurm_register_freeze_policies", FreezePolicyPlugin,
                                               "freeze policy")
        return self._freeze

    def get_priority_plugin(self, name: str) -> PriorityPlugin:
        """The plugin that slurm.conf's ``PriorityType=priority/NAME`` selects."""
        return _selected(self.get_priority_plugins(), name, "PriorityType", "priority")

    def accel_backend_names(self) -> list[str]:
        return list(self.get_accel_backends())

    def get_accel_backend(self, name: str) -> AccelBackend:
        """The backend called ``name``; ``UnknownPluginError`` lists the valid names."""
        backends = self.get_accel_backends()
        try:
            return backends[name]
        except KeyError:
            valid = ", ".join(backends) or "(none registered)"
            raise UnknownPluginError(f"unknown accelerator backend {name!r} "
                                     f"(valid: {valid})") from None


def _selected(plugins: dict[str, Any], name: str, key: str, prefix: str) -> Any:
    """The record slurm.conf's ``KEY=PREFIX/NAME`` selects; UnknownPluginError lists the valid ones."""
    try:
        return plugins[name]
    except KeyError:
        valid = ", ".join(f"{prefix}/{n}" for n in plugins) or "(none registered)"
        raise UnknownPluginError(f"unknown {key} {prefix}/{name} (valid: {valid})") from None


def _with_package(record: AccelBackend, package: str) -> AccelBackend:
    from dataclasses import replace
    return replace(record, package=package)


_manager: PluginManager | None = None
_lock = threading.Lock()


def get_plugin_manager() -> PluginManager:
    """The process's plugin manager, built on first use (plugin discovery costs
    tens of milliseconds, so commands that need no plugin never pay it)."""
    global _manager
    with _lock:
        if _manager is None:
            _manager = PluginManager()
        return _manager


def reset_plugin_manager() -> None:
    """Forget the process's manager (tests; reconfigure after installing a plugin)."""
    global _manager
    with _lock:
        _manager = None

