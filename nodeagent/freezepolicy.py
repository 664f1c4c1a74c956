"""The freeze policy: which running jobs plurmd freezes as anomalous, and why.

plurmd's sampling loop builds a ``Sample`` of each running job on its node (resident memory,
memory limit, the device files it holds open) and hands it to ``Policies.observe``; a
``Verdict`` back means "freeze this job now": plurmd freezes it (the cgroup freezer, or
SIGSTOP of its process groups without cgroups), tells the controller (``job_frozen``), and
the job waits for ``scontrol resume`` or ``scancel``.  Which jobs are anomalous is decided
here and in plugins; how to freeze is plurmd's.

Policies are records of ``plurm.plugins.types.FreezePolicyPlugin``: every plugin's, from the
``plurm_register_freeze_policies`` hook, then the two built-in checks, which are records of
the same type that ``Policies.load`` adds itself (registering them as a pluggy built-in
would import the node agent in every process that builds a plugin manager):

* ``memory``: resident memory at or above ``FreezeMemoryFraction`` of the job's memory limit
  on the node, without a dip, for ``FreezeMemoryFor`` seconds; and, when
  ``FreezeMemoryGrowth`` is set, memory that kept growing at least that fast (bytes per
  second, in each quarter of the window) for ``FreezeMemoryGrowthWindow`` seconds.
* ``device``: the job holds open a device file of the node that is not in its allocation.

Both are off unless plurm.conf (beside slurm.conf; ``plurm.grammar.plurmconf``) names them
in ``FreezePolicy=``.  The settings live there because real Slurm rejects unknown keys in
slurm.conf and cgroup.conf.  Time comes only from the samples (``Sample.at``), so the module
is pure and its tests feed synthetic streams.  Memory is bounded: per job a deque with a
maxlen, and nothing at all for a job once it is forgotten.
"""

from __future__ import annotations

import logging
import math
import os
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from plurm.common.ratelimit import RateLimitedLog
from plurm.grammar.confsyntax import ConfError
from plurm.grammar.plurmconf import PlurmConf, plurm_conf_path, read_plurm_conf
from plurm.plugins.manager import DuplicatePluginError, PluginManager, get_plugin_manager
from plurm.plugins.types import FreezePolicy, FreezePolicyPlugin, resolve

__all__ = ["BUILTIN_KEYS", "BUILTIN_RECORDS", "ConfError", "DevicePolicy", "FreezeSettings",
           "MemoryPolicy", "Policies", "Sample", "Verdict"]

log = logging.getLogger("plurm.nodeagent.freezepolicy")

FREEZE = "freeze"          # the one action a verdict may ask for today
MAX_CAUSE = 100            # a cause becomes part of a job's reason: one short line
# A fall in memory this small is measurement noise (page reclaim, the allocator), not a dip.
GROWTH_NOISE_BYTES = 1 << 20
WINDOW_SAMPLES = 64        # the growth window's maxlen, per job
GROWTH_PARTS = 4           # growth must be fast enough in each quarter of its window


@dataclass
class Sample:
    """One job's usage on this node at one moment (built by plurmd's sampling loop)."""

    job_id: int
    uid: int
    at: float                                # seconds on the caller's monotonic clock
    rss_bytes: int                           # resident memory of all the job's processes here
    mem_limit_bytes: int | None              # its memory limit here (None: not limited)
    allocated_devices: list[str] = field(default_factory=list)   # device files it was given
    opened_devices: list[str] = field(default_factory=list)      # device files it holds open
    # The node's allocatable device files (gres.conf File=).  When given, only an opened file
    # among them can be an anomaly, so /dev/null or /dev/nvidiactl never are; when empty,
    # every opened device not allocated counts (the caller reports only GPU files).
    node_devices: list[str] = field(default_factory=list)


@dataclass
class Verdict:
    """What a policy decided about a job: ``action`` "freeze", with a short ``cause``."""

    job_id: int
    action: str                              # "freeze"
    cause: str                               # "memory 95% of 100M for 30s": becomes the reason
    policy: str = ""                         # which policy; Policies fills it in


# ============================================================== settings (plurm.conf)

CHECKS = ("memory", "device")
_CHECK_ALIASES = {"memory": "memory", "mem": "memory", "device": "device", "devices": "device"}
BUILTIN_KEYS: dict[str, str] = {k.lower(): k for k in (
    "FreezePolicy", "FreezeMemoryFraction", "FreezeMemoryFor", "FreezeMemoryGrowth",
    "FreezeMemoryGrowthWindow")}

_NUMBER_RE = re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")
_RATE_RE = re.compile(r"([0-9]+(?:\.[0-9]*)?)([KMGT]?)(?:B)?(?:/S)?", re.I)
_UNIT = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


@dataclass(frozen=True)
class FreezeSettings:
    """The built-in checks' settings; the defaults are what an absent key means."""

    checks: frozenset[str] = frozenset()     # FreezePolicy= (empty: off)
    memory_fraction: float = 0.9             # FreezeMemoryFraction=
    memory_for_s: float = 30.0               # FreezeMemoryFor= (seconds)
    memory_growth_bps: float | None = None   # FreezeMemoryGrowth= (bytes/s; None: no rate rule)
    memory_growth_window_s: float = 120.0    # FreezeMemoryGrowthWindow= (seconds)

    @classmethod
    def from_conf(cls, conf: PlurmConf) -> FreezeSettings:
        """The settings of a plurm.conf; a bad value is a ``ConfError`` "FILE:LINE: ..."."""
        checks: set[str] = set()
        policy = (conf.get("FreezePolicy") or "").strip()
        if policy.lower() not in ("", "none", "off"):
            for item in policy.split(","):
                check = _CHECK_ALIASES.get(item.strip().lower())
                if check is None:
                    raise conf.error("FreezePolicy", f"invalid FreezePolicy item {item.strip()!r} "
                                     f"(valid: {', '.join(CHECKS)}, or none)")
                checks.add(check)
        fraction = _fraction(conf, "FreezeMemoryFraction", cls.memory_fraction)
        for_s = _seconds(conf, "FreezeMemoryFor", cls.memory_for_s, minimum=0.0)
        window = _seconds(conf, "FreezeMemoryGrowthWindow", cls.memory_growth_window_s, minimum=1.0)
        growth = _rate(conf, "FreezeMemoryGrowth")
        if "memory" not in checks:
            for key in ("FreezeMemoryFraction", "FreezeMemoryFor", "FreezeMemoryGrowth",
                        "FreezeMemoryGrowthWindow"):
                if key in conf:
                    conf.warnings.append(f"{conf.where(key)}: {key} has no effect: "
                                         "FreezePolicy does not include memory")
        return cls(frozenset(checks), fraction, for_s, growth, window)


def _fraction(conf: PlurmConf, key: str, default: float) -> float:
    # "0.9" or "90%": of the job's memory limit.  Above 1 only makes sense where the limit is
    # not enforced (no cgroup): under one the kernel's OOM killer acts at 1.
    text = conf.get(key)
    if text is None:
        return default
    value = text.strip()
    percent = value.endswith("%")
    number = value[:-1].strip() if percent else value
    if not _NUMBER_RE.fullmatch(number):
        raise conf.error(key, f"invalid value {text!r} for {key} (expected a fraction such as 0.9, or 90%)")
    fraction = float(number) / (100.0 if percent else 1.0)
    if not 0.0 < fraction <= 10.0:
        raise conf.error(key, f"invalid value {text!r} for {key} (must be above 0 and at most 10)")
    return fraction


def _seconds(conf: PlurmConf, key: str, default: float, minimum: float) -> float:
    text = conf.get(key)
    if text is None:
        return default
    value = text.strip().lower().removesuffix("s")
    if not _NUMBER_RE.fullmatch(value):
        raise conf.error(key, f"invalid value {text!r} for {key} (expected seconds, such as 30)")
    seconds = float(value)
    if seconds < minimum or not math.isfinite(seconds):
        raise conf.error(key, f"invalid value {text!r} for {key} (must be at least {minimum:g} seconds)")
    return seconds


def _rate(conf: PlurmConf, key: str) -> float | None:
    # Bytes per second with Slurm's binary units: "10M" (or "10M/s") is 10 MiB a second.
    text = conf.get(key)
    if text is None or text.strip().lower() in ("", "none", "off"):
        return None
    m = _RATE_RE.fullmatch(text.strip())
    if not m or float(m.group(1)) <= 0:
        raise conf.error(key, f"invalid value {text!r} for {key} "
                         "(expected a positive rate in bytes per second, such as 10M)")
    return float(m.group(1)) * _UNIT[m.group(2).upper()]


# ============================================================== the built-in checks

def size_text(n: float) -> str:
    """A byte count the way Slurm prints memory: 100M, 1.5G, 512K."""
    for unit, scale in (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale:
            value = n / scale
            text = f"{value:.0f}" if value >= 10 else f"{value:.1f}".removesuffix(".0")
            return text + unit
    return f"{n:.0f}"


class MemoryPolicy:
    """Memory near the limit for too long, and (optionally) memory that keeps growing."""

    def __init__(self, settings: FreezeSettings) -> None:
        self.fraction = settings.memory_fraction
        self.for_s = settings.memory_for_s
        self.growth_bps = settings.memory_growth_bps
        self.window_s = settings.memory_growth_window_s
        # A sample is kept in the window only this far after the previous kept one, so that
        # WINDOW_SAMPLES always span the window however often plurmd samples.
        self._spacing = self.window_s / (WINDOW_SAMPLES // 2)
        self._above_since: dict[int, float] = {}
        self._last: dict[int, tuple[float, int]] = {}
        self._window: dict[int, deque[tuple[float, int]]] = {}

    def observe(self, sample: Sample) -> Verdict | None:
        job = sample.job_id
        last = self._last.get(job)
        if last is not None and sample.at < last[0]:
            self.forget(job)  # the clock went back (a restarted sampler): start over
            last = None
        self._last[job] = (sample.at, sample.rss_bytes)
        verdict = self._near_limit(sample)
        if verdict is None and self.growth_bps is not None:
            verdict = self._growing(sample, last)
        return verdict

    def _near_limit(self, sample: Sample) -> Verdict | None:
        limit = sample.mem_limit_bytes
        if not limit or sample.rss_bytes < self.fraction * limit:
            self._above_since.pop(sample.job_id, None)  # under it (or no limit): a dip resets
            return None
        since = self._above_since.setdefault(sample.job_id, sample.at)
        if sample.at - since < self.for_s:
            return None
        percent = 100 * sample.rss_bytes // limit
        return Verdict(sample.job_id, FREEZE, f"memory {percent}% of {size_text(limit)} "
                       f"for {sample.at - since:.0f}s", "memory")

    def _growing(self, sample: Sample, last: tuple[float, int] | None) -> Verdict | None:
        window = self._window.get(sample.job_id)
        if window is None or (last is not None and sample.rss_bytes < last[1] - GROWTH_NOISE_BYTES):
            window = self._window[sample.job_id] = deque(maxlen=WINDOW_SAMPLES)  # fell: a new window
        if not window or sample.at - window[-1][0] >= self._spacing:
            window.append((sample.at, sample.rss_bytes))
        start = sample.at - self.window_s
        while len(window) > 1 and window[1][0] <= start:
            window.popleft()  # keep one sample at or before the window's start, no older
        if window[0][0] > start or sample.at <= window[0][0]:
            return None  # memory has not been growing for a whole window yet
        # Sustained, not one burst: fast enough in each part of the window, measured from the
        # last sample at or before each part's start (parts with no sample between merge).
        points = [window[0]]
        for i in range(1, GROWTH_PARTS):
            boundary = start + i * self.window_s / GROWTH_PARTS
            point = max((p for p in window if p[0] <= boundary), key=lambda p: p[0])
            if point[0] > points[-1][0]:
                points.append(point)
        if sample.at > points[-1][0]:
            points.append((sample.at, sample.rss_bytes))
        for (t0, r0), (t1, r1) in zip(points, points[1:]):
            if (r1 - r0) / (t1 - t0) < self.growth_bps:
                return None
        first_at, first_rss = points[0]
        rate = (sample.rss_bytes - first_rss) / (sample.at - first_at)
        return Verdict(sample.job_id, FREEZE, f"memory grew {size_text(rate)}/s for "
                       f"{sample.at - first_at:.0f}s to {size_text(sample.rss_bytes)}", "memory")

    def forget(self, job_id: int) -> None:
        self._above_since.pop(job_id, None)
        self._last.pop(job_id, None)
        self._window.pop(job_id, None)

    def jobs(self) -> set[int]:
        """The jobs it keeps anything for (tests: bounded memory)."""
        return set(self._above_since) | set(self._last) | set(self._window)


class DevicePolicy:
    """A device file of the node held open by a job that was not given it."""

    def observe(self, sample: Sample) -> Verdict | None:
        allocated = {os.path.normpath(d) for d in sample.allocated_devices}
        node = {os.path.normpath(d) for d in sample.node_devices}
        outside = sorted({os.path.normpath(d) for d in sample.opened_devices if d} - allocated)
        if node:
            outside = [d for d in outside if d in node]
        if not outside:
            return None
        more = f" and {len(outside) - 2} more" if len(outside) > 2 else ""
        return Verdict(sample.job_id, FREEZE, f"opened {' '.join(outside[:2])}{more}, "
                       "not allocated", "device")

    def forget(self, job_id: int) -> None:
        """Nothing is kept per job."""


def _memory_factory(conf: PlurmConf) -> MemoryPolicy | None:
    settings = FreezeSettings.from_conf(conf)
    return MemoryPolicy(settings) if "memory" in settings.checks else None


def _device_factory(conf: PlurmConf) -> DevicePolicy | None:
    return DevicePolicy() if "device" in FreezeSettings.from_conf(conf).checks else None


BUILTIN_RECORDS: tuple[FreezePolicyPlugin, ...] = (
    FreezePolicyPlugin("memory", _memory_factory, tuple(BUILTIN_KEYS.values()),
                       "memory near the job's limit for too long, or growing too fast", "plurm"),
    FreezePolicyPlugin("device", _device_factory, ("FreezePolicy",),
                       "a device file of the node held open outside the job's allocation", "plurm"),
)


# ============================================================== all the policies

class Policies:
    """Every policy that is on, asked in turn; the first verdict wins.

    A job with a verdict is asked about no more until ``forget``: it is frozen, waiting for
    ``scontrol resume`` or ``scancel``.  ``forget(job, resumed=True)`` (the job was resumed)
    also excuses it from the policy that froze it for the rest of its life, so that resuming
    a job the administrator has judged sound does not freeze it again a moment later.
    """

    def __init__(self, policies: Iterable[tuple[str, FreezePolicy]] = (), path: str = "") -> None:
        self.policies: list[tuple[str, FreezePolicy]] = list(policies)
        self.path = path
        self._frozen: dict[int, str] = {}          # job -> the policy whose verdict froze it
        self._excused: dict[int, set[str]] = {}    # job -> policies it was resumed from
        self._errors = RateLimitedLog(log, burst=5, window_s=300.0)

    @classmethod
    def load(cls, slurm_conf_path: str, manager: PluginManager | None = None) -> Policies:
        """Plugins' policies and the built-in checks that plurm.conf beside ``slurm_conf_path``
        turns on.  Raises ``ConfError`` ("FILE:LINE: ...") for a bad or unknown Freeze* key
        and ``DuplicatePluginError`` when a plugin takes a built-in check's name."""
        conf = read_plurm_conf(plurm_conf_path(slurm_conf_path))
        plugins = (manager or get_plugin_manager()).get_freeze_policies()
        taken = sorted(set(plugins) & {r.name for r in BUILTIN_RECORDS})
        if taken:
            detail = "; ".join(f"{n!r} from plurm, {plugins[n].package}" for n in taken)
            raise DuplicatePluginError(f"freeze policy name registered more than once: {detail}")
        records = list(plugins.values()) + list(BUILTIN_RECORDS)
        _check_keys(conf, records)
        policies: list[tuple[str, FreezePolicy]] = []
        for record in records:
            try:
                policy = resolve(record.factory)(conf)
            except ConfError:
                raise
            except Exception as exc:  # a plugin's bug must not keep plurmd from starting
                log.warning("freeze policy %s (from %s) failed to start and is skipped: %s: %s",
                            record.name, record.package, type(exc).__name__, exc)
                continue
            if policy is not None:
                policies.append((record.name, policy))
        for warning in conf.warnings:
            log.warning("%s", warning)
        if policies:
            log.info("freeze policies on: %s", ", ".join(name for name, _ in policies))
        return cls(policies, conf.path)

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.policies]

    def __bool__(self) -> bool:
        """False when no policy is on: plurmd need not build samples at all."""
        return bool(self.policies)

    @property
    def wants_open_devices(self) -> bool:
        """Whether samples need ``opened_devices`` (scanning /proc/PID/fd costs): the
        ``device`` check, or a plugin policy that does not say ``uses_devices = False``."""
        return any(name == "device" or (name not in {r.name for r in BUILTIN_RECORDS}
                                         and getattr(policy, "uses_devices", True))
                   for name, policy in self.policies)

    def observe(self, sample: Sample) -> Verdict | None:
        """A verdict on the job, or None.  Never raises: a policy that does is logged and
        skipped for this sample."""
        job = sample.job_id
        if job in self._frozen:
            return None
        excused = self._excused.get(job, ())
        for name, policy in self.policies:
            if name in excused:
                continue
            try:
                verdict = policy.observe(sample)
            except Exception as exc:
                self._errors.warning(name, "freeze policy %s failed on job %d and is skipped: %s: %s",
                                     name, job, type(exc).__name__, exc)
                continue
            if verdict is None:
                continue
            if not isinstance(verdict, Verdict) or verdict.action != FREEZE or verdict.job_id != job:
                self._errors.warning(name, "freeze policy %s returned %r for job %d, not a freeze "
                                     "Verdict for that job; ignored", name, verdict, job)
                continue
            # The cause becomes the job's reason: one line, bounded, whatever a plugin wrote.
            cause = " ".join(str(verdict.cause).split())[:MAX_CAUSE] or name
            verdict = replace(verdict, cause=cause, policy=name)
            self._frozen[job] = name
            log.warning("job %d (uid %d): freeze policy %s: %s", job, sample.uid, name, cause)
            return verdict
        return None

    def forget(self, job_id: int, resumed: bool = False) -> None:
        """The job ended (or, with ``resumed``, was resumed): drop what is kept for it."""
        froze = self._frozen.pop(job_id, None)
        if resumed and froze is not None:
            self._excused.setdefault(job_id, set()).add(froze)
        elif not resumed:
            self._excused.pop(job_id, None)
        for name, policy in self.policies:
            try:
                policy.forget(job_id)
            except Exception as exc:
                self._errors.warning(name, "freeze policy %s failed to forget job %d: %s: %s",
                                     name, job_id, type(exc).__name__, exc)

    def jobs(self) -> set[int]:
        """The jobs anything is kept for here (tests: bounded memory)."""
        return set(self._frozen) | set(self._excused)


def _check_keys(conf: PlurmConf, records: list[FreezePolicyPlugin]) -> None:
    # A misspelt Freeze* key is an error (a policy silently left at its default is worse than
    # a plurmd that will not start); other unknown keys may belong to other plurm features.
    known = {k.lower() for record in records for k in record.keys}
    for setting in conf:
        name = setting.key.lower()
        if name in known:
            continue
        if name.startswith("freeze"):
            valid = ", ".join(sorted({k for record in records for k in record.keys}))
            raise setting.loc.error(f"unknown key {setting.key!r} (valid: {valid})")
        conf.warnings.append(f"{setting.loc}: unknown key {setting.key!r}, ignored")
