"""The plurm plugin API: every hook a plugin may implement, in one place.

A plugin is a module or object with functions named like the hooks below and
marked ``@hookimpl``; a package exposes it through an entry point in group
``plurm``::

    [project.entry-points.plurm]
    acme = "acme_plurm.plugin"

Hooks are grouped by the lifecycle stage at which they run.  Each docstring says
when and in which daemon the hook runs and what its result means.  Only
``plurm.plugins.manager.PluginManager`` calls hooks; the rest of plurm calls its
typed methods.  Built-in implementations register through these same hooks with
``trylast=True``, so a third-party plugin is always consulted first and no code
relies on registration order.

Hooks still to come (preemption, job submission, accounting) go into new
sections below, following the same rules.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from plurm.plugins.types import AccelBackend, AuthTypePlugin, FreezePolicyPlugin, PreemptPlugin, PriorityPlugin

__all__ = ["PROJECT", "ENTRY_POINT_GROUP", "hookimpl", "hookspec"]

PROJECT = "plurm"
ENTRY_POINT_GROUP = "plurm"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# ---------------------------------------------------------------------------
# Registration: run once when a daemon builds its plugin manager, before it
# reads its configuration.  They return named records; the configuration picks
# one or more by name.
# ---------------------------------------------------------------------------

@hookspec
def plurm_register_accel_backends() -> Iterable[AccelBackend]:
    """Register accelerator backends (``plurm.plugins.types.AccelBackend`` records).

    When: once, the first time a process asks for accelerator backends: in plurmd at
    start-up and on reconfigure (device registration, binding variables at job
    launch, usage and health sampling), and in the probe subprocess when it is asked
    for a backend by name.

    Result: every implementation's records are collected (not firstresult).  A
    backend name must be unique across all plugins: a duplicate is an error naming
    the packages that supplied it.  gres.conf ``AutoDetect=`` and the node's
    configuration select backends by name; an unknown name is an error listing the
    valid ones.

    The hook itself must be cheap and must not import vendor libraries: it only
    describes the backend.  Detection, usage and health run later, in a probe
    subprocess with a timeout.
    """


@hookspec
def plurm_register_priority_plugins() -> Iterable[PriorityPlugin]:
    """Register job priority policies (``plurm.plugins.types.PriorityPlugin`` records).

    When: once, in plurmctld at start-up, before it loads its jobs; slurm.conf's
    ``PriorityType=priority/NAME`` selects the record called NAME (``basic`` and
    ``multifactor`` are built in).  The chosen policy's object then computes every
    pending job's priority at submission and every ``PriorityCalcPeriod``, in
    plurmctld's scheduling loop, and ``sprio`` shows its factors.

    Result: every implementation's records are collected (not firstresult).  A name must
    be unique across all plugins (a duplicate is an error naming the packages); an
    unknown ``PriorityType`` is an error listing the valid ones.  The factory and the
    object it returns run inside the controller's loop: they must not block.
    """


@hookspec
def plurm_register_auth_types() -> Iterable[AuthTypePlugin]:
    """Register credential plugins (``plurm.plugins.types.AuthTypePlugin`` records).

    When: in every command and in both daemons (plurmctld, plurmd) at start-up, when
    slurm.conf's ``AuthType=auth/NAME`` names a plugin that is not built in (``auth/local`` and ``auth/munge`` are resolved without
    the plugin manager, for the commands' start-up).  The object the factory returns
    makes this process's credentials and verifies its peers': what it returns from
    ``verify`` is who the daemons believe the sender is, so it must never take a uid
    from the message itself.

    Result: every implementation's records are collected (not firstresult); a name must
    be unique across all plugins; an unknown ``AuthType`` is an error listing the valid ones.
    """


@hookspec
def plurm_register_preempt_plugins() -> Iterable[PreemptPlugin]:
    """Register preemption policies (``plurm.plugins.types.PreemptPlugin`` records).

    When: once, in plurmctld at start-up; slurm.conf's ``PreemptType=preempt/NAME``
    selects the record called NAME (``none`` and ``partition_prio`` are built in).  In
    every scheduling pass of plurmctld, for a pending job that waits for resources, the
    chosen policy names the running jobs it may preempt; the controller preempts the
    fewest that make room, as the preempted jobs' PreemptMode says (CANCEL, REQUEUE).

    Result: every implementation's records are collected (not firstresult).  A name must
    be unique across all plugins; an unknown ``PreemptType`` is an error listing the valid
    ones.  The policy runs inside the controller's loop: it must not block.
    """


@hookspec
def plurm_register_freeze_policies() -> Iterable[FreezePolicyPlugin]:
    """Register freeze policies (``plurm.plugins.types.FreezePolicyPlugin`` records).

    When: once, in plurmd at start-up and on reconfigure, when it builds its policies
    (``plurm.nodeagent.freezepolicy.Policies.load``).  Each record's factory is called
    with the parsed plurm.conf (beside slurm.conf) and returns a policy object or None
    (off).  Every policy that is on then sees each running job's usage samples in plurmd's
    sampling loop: ``observe(sample)`` returns a ``Verdict`` (freeze the job, with a cause
    shown as its reason) or None, and ``forget(job_id)`` is called when the job ends or is
    resumed.  Unlike the hooks above no configuration key selects one: every registered
    policy that its factory turns on is consulted, before plurm's built-in checks; the
    first verdict wins.

    Result: every implementation's records are collected (not firstresult).  A name must
    be unique across all plugins (a duplicate is an error naming the packages).  A policy
    that raises in ``observe`` is logged and skipped for that sample; it must not block.
    """
