"""The records that ``plurm_register_*`` hooks return.

One record names one implementation of a plugin kind; configuration selects one
by name (conda's pattern).  Callables may be given directly or as import paths
(``"package.module:function"``): accelerator functions run in a probe
subprocess, which imports them by path, so a path is what crosses the process
boundary either way (see ``callable_path``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, Union

__all__ = ["AccelBackend", "AuthTypePlugin", "FreezePolicy", "FreezePolicyPlugin", "PreemptPlugin", "PriorityPlugin",
           "Ref", "callable_path", "resolve"]

# A callable, or "module:qualname" naming one.
Ref = Union[str, Callable[..., Any]]

# Signatures, for the reader (and type checkers) — every one takes plain data.  Device is
# plurm.accel.model.Device, named as a string: the plugin API sits below the accelerator
# layer (accel imports plugins, never the other way round).
#   detect(options: Mapping[str, str]) -> list[Device]
#   binding_env(devices: Sequence[Device], use_uuid: bool = False) -> dict[str, str]
#   usage(devices: Sequence[Device], options: Mapping[str, str])
#       -> dict[uuid, {"util": float, "mem_used_mb": int}]
#   health_check(devices: Sequence[Device], options: Mapping[str, str]) -> dict[uuid, reason]
DetectFn = Callable[[Mapping[str, str]], "list[Device]"]
BindingEnvFn = Callable[..., "dict[str, str]"]


@dataclass(frozen=True)
class AccelBackend:
    """An accelerator backend, as returned by ``plurm_register_accel_backends``.

    name:        unique backend name (``nvml``, ``amdsmi``, ``opencl``, ``static``, ``acme``)
    vendor:      who makes the devices it finds (``nvidia``, ``amd``, ``any``, ...)
    detect:      finds the devices; runs in a probe subprocess (may import the
                 vendor library; may crash or hang without harming the daemon)
    binding_env: the job environment that makes a set of devices visible; runs in
                 the node daemon, so it must not import the vendor library
    usage:       per-device utilisation and memory; probe subprocess; optional
    health_check: per-device reason for unhealthy devices; probe subprocess; optional
    requires:    modules whose presence (``importlib.util.find_spec``, no import)
                 means the backend is installed; ``detect("auto")`` tries those
    autodetect:  gres.conf ``AutoDetect=`` values this backend answers (``rsmi``)
    in_auto:     False for backends that need configuration rather than hardware
                 (``static`` reads gres.conf), so ``auto`` leaves them out
    """

    name: str
    vendor: str
    detect: Ref
    binding_env: Ref
    usage: Ref | None = None
    health_check: Ref | None = None
    requires: tuple[str, ...] = ()
    autodetect: tuple[str, ...] = ()
    in_auto: bool = True
    description: str = ""
    # Filled in by the plugin manager: the distribution that supplied the record.
    package: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            raise TypeError("AccelBackend.name must be a non-empty string")
        for attr in ("detect", "binding_env"):
            if not (callable(getattr(self, attr)) or isinstance(getattr(self, attr), str)):
                raise TypeError(f"AccelBackend {self.name!r}: {attr} must be a callable "
                                "or a 'module:function' path")


@dataclass(frozen=True)
class PriorityPlugin:
    """A job priority policy, as returned by ``plurm_register_priority_plugins``.

    name:    what slurm.conf selects: ``PriorityType=priority/NAME`` (``basic``, ``multifactor``)
    factory: called once in plurmctld with the parsed slurm.conf (``plurm.grammar.slurmconf.SlurmConf``);
             returns an object with ``factors(job, now, cluster) -> dict[str, float]`` (each factor
             in [0, 1], keyed like sprio's columns: age, fairshare, jobsize, partition, qos, site)
             and ``priority(job, now, cluster) -> int``; optionally
             ``priorities(jobs, now, cluster) -> list[int]``, the same for many jobs at once,
             which plurmctld prefers every PriorityCalcPeriod (multifactor's runs in the
             compiled priority kernel).  ``cluster`` is a
             ``plurm.corescheduler.priority.ClusterShape`` (total nodes and CPUs, partitions).
    """

    name: str
    factory: Ref
    description: str = ""
    package: str = field(default="", compare=False)


@dataclass(frozen=True)
class PreemptPlugin:
    """A preemption policy, as returned by ``plurm_register_preempt_plugins``.

    name:    what slurm.conf selects: ``PreemptType=preempt/NAME`` (``none``, ``partition_prio``)
    factory: called once in plurmctld with the parsed slurm.conf; returns an object with
             ``candidates(job, running, partitions, now, exempt_s, qos_preempts) -> list[Job]``:
             the running jobs that may be preempted for the pending ``job``, in the order to
             take them (the controller takes the fewest that make room, and never a job of an
             equal or higher tier when the policy is partition_prio); ``qos_preempts`` maps a
             QOS to the QOS names it may preempt (sacctmgr's Preempt=).  An object with
             ``uses_qos = True`` has a victim's QOS PreemptMode apply before its partition's.
    """

    name: str
    factory: Ref
    description: str = ""
    package: str = field(default="", compare=False)


@dataclass(frozen=True)
class AuthTypePlugin:
    """A credential plugin, as returned by ``plurm_register_auth_types``.

    name:    what slurm.conf selects: ``AuthType=auth/NAME`` (``local``, ``munge`` are built in)
    factory: called once per process (every command and daemon) as
             ``factory(key_path=..., auth_info={...})`` (``AuthInfo``'s key=value pairs);
             returns an object with ``name``, ``credential(digest: bytes) -> bytes``
             (a credential for this process's user over a message digest) and
             ``verify(credential, digest, allow_replay=False) -> (uid, gid)`` that raises
             ``plurm.wire.auth.AuthError`` unless the credential proves a sender over
             exactly that digest.  Daemons act on the uid and gid it returns.
    """

    name: str
    factory: Ref
    description: str = ""
    package: str = field(default="", compare=False)


class FreezePolicy(Protocol):
    """What a freeze policy object does (the object a ``FreezePolicyPlugin`` factory returns).

    ``sample`` is a ``plurm.nodeagent.freezepolicy.Sample`` and the verdict a
    ``plurm.nodeagent.freezepolicy.Verdict`` (named as strings: the plugin API sits below
    the node agent).  Both methods run in plurmd's sampling loop: they must not block.
    """

    def observe(self, sample: Any) -> Any:
        """A ``Verdict`` to act on the job now, or None."""

    def forget(self, job_id: int) -> None:
        """Drop what is kept for the job (it ended, or it was resumed)."""


@dataclass(frozen=True)
class FreezePolicyPlugin:
    """A freeze policy, as returned by ``plurm_register_freeze_policies``.

    name:    unique, in logs and in the verdicts' ``policy`` (``memory``, ``device`` are the
             built-in checks' names and may not be taken)
    factory: called once in plurmd with the parsed plurm.conf
             (``plurm.grammar.plurmconf.PlurmConf``); returns a ``FreezePolicy`` object, or
             None when the site's plurm.conf leaves the policy off.  A bad value is reported
             by raising ``conf.error(key, message)`` (a ``ConfError`` naming file and line).
    keys:    the plurm.conf keys the policy reads, so they are not reported as unknown
    """

    name: str
    factory: Ref
    keys: tuple[str, ...] = ()
    description: str = ""
    package: str = field(default="", compare=False)


def resolve(ref: Ref) -> Callable[..., Any]:
    """The callable a ``Ref`` names (imports the module for a path)."""
    if callable(ref):
        return ref
    module, _, qualname = ref.partition(":")
    if not qualname:
        raise ValueError(f"{ref!r} is not a 'module:function' path")
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def callable_path(ref: Ref) -> str:
    """``"module:qualname"`` for a Ref, so another process can import it.

    Lambdas and nested functions have no importable path: a backend must use
    module-level functions (checked here, with a message that says so).
    """
    if isinstance(ref, str):
        return ref
    module = getattr(ref, "__module__", None)
    qualname = getattr(ref, "__qualname__", None)
    if not module or not qualname or "<" in qualname or module == "__main__":
        raise ValueError(f"{ref!r} cannot be imported by the probe subprocess: use a "
                         "module-level function or a 'module:function' path")
    return f"{module}:{qualname}"

