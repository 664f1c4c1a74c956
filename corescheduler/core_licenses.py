"""Licenses in the core: the submission check, the scheduling pass's gate, the report.

A mixin of ``ClusterCore`` (through core_options.OptionEffects), pure like the rest of the
core.  slurm.conf's ``Licenses=`` totals are ``license_totals`` (configure.py sets them,
``scontrol reconfigure`` replaces them through ``set_license_totals``); a job's request is
its spec's ``licenses`` text, checked and normalised at submission (``check_licenses``).

A job holds its licenses while it is RUNNING, SUSPENDED or completing: they are counted
from those jobs each time (licenses.py), so every way a job stops holding its allocation
(end, requeue, preemption, node failure) gives them back.  ``ClusterCore.schedule`` passes
its candidates, in priority order, through ``_license_gate`` before placing them: a job
whose licenses are not free now, or whose licenses a higher-priority job is planned to
use (``LicenseTimeline``), waits with reason ``Licenses`` and gets a planned start after
the holders' ends (squeue --start); a job whose licenses are free keeps them for its
time limit in the plan, so that lower-priority jobs cannot take them from under it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from plurm.corescheduler import licenses as lic
from plurm.corescheduler.errors import RequestError
from plurm.wire import model
from plurm.wire.model import Job, JobSpec

log = logging.getLogger("plurmctld")

_HOLDING = (model.RUNNING, model.SUSPENDED)
# Pending jobs per pass whose license start is planned (and held in the plan); the ones after
# them start only where their licenses are free now and stay free, as bf_max_job_test bounds
# backfill's work.
PLAN_LIMIT = 50


class LicenseEffects:
    license_totals: dict[str, int] = {}  # (class default: no Licenses= line; set per core)

    if TYPE_CHECKING:  # provided by ClusterCore
        jobs: dict[int, Job]
        need_schedule: bool

        def _save(self, job: Job) -> None: ...

    def set_license_totals(self, totals: dict[str, int]) -> bool:
        """Licenses= read again (scontrol reconfigure); True when they changed.  Jobs that
        hold more than a new total keep what they hold; new jobs wait for the rest."""
        changed = totals != self.license_totals
        self.license_totals = dict(totals)
        if changed:
            self.need_schedule = True
            log.info("licenses: %s", lic.format_request(totals) or "none configured")
        return changed

    def check_licenses(self, spec: JobSpec) -> None:
        """-L at submission: refused as slurmctld refuses it; kept as written (scontrol show job and
        squeue %W show ``matlab,fluent:1,fluent:2`` as 22.05 does, not summed)."""
        if spec.licenses is None:
            return
        try:
            lic.parse_request(spec.licenses, self.license_totals)
        except lic.LicenseSpecError as exc:
            log.info("submission refused: invalid license specification %.200r: %s", spec.licenses, exc)
            raise RequestError(lic.INVALID_REQUEST, "InvalidLicense") from None

    def _update_licenses(self, job: Job, text: str | None) -> None:
        """scontrol update job Licenses=: checked as at submission ("" takes them all away; 22.05
        then shows ``Licenses=``), for a running job too, as 22.05.8 does; the pool follows."""
        if text is None:
            return
        if text:
            try:
                lic.parse_request(text, self.license_totals)
            except lic.LicenseSpecError as exc:
                log.info("job %s: update refused: invalid license specification %.200r: %s", job.job_id, text, exc)
                raise RequestError(lic.INVALID_REQUEST, "InvalidLicense") from None
        job.spec.licenses = text

    def _held_licenses(self) -> list[tuple[Job, dict[str, int]]]:
        return [(job, wanted) for job in self.jobs.values()
                if job.spec.licenses and (job.state in _HOLDING or job.completing)
                and (wanted := lic.parse_held(job.spec.licenses))]

    def license_report(self, names: Iterable[str] = ()) -> list[dict[str, Any]]:
        """What ``scontrol show licenses [name]`` prints."""
        if not self.license_totals:
            return []
        used = lic.usage(self.license_totals, (w for _, w in self._held_licenses()))
        return lic.report(self.license_totals, used, names)

    def _license_gate(self, candidates: list[tuple[Job, Any]], now: float) -> list[tuple[Job, Any]]:
        """The candidates (priority order) that may be placed now as far as licenses go;
        the others get reason Licenses and a planned start (None: not while a job without
        a time limit holds what they need)."""
        if not any(job.spec.licenses for job, _ in candidates):
            return candidates
        timeline = lic.LicenseTimeline(self.license_totals, now)
        for job, wanted in self._held_licenses():
            end = job.end_time if job.state == model.RUNNING else None  # (suspended: until resumed)
            if job.completing or (end is not None and end <= now):
                end = now + 1.0  # being cleaned up, or its time limit just passed: back very soon
            timeline.hold(wanted, now, end)
        kept: list[tuple[Job, Any]] = []
        planned = 0
        for job, demand in candidates:
            wanted = lic.parse_held(job.spec.licenses)
            if not wanted:
                kept.append((job, demand))
                continue
            length = None if job.time_limit is None else job.time_limit * 60.0
            if planned >= PLAN_LIMIT:  # deep in a long queue: no plan (it costs), still no start
                start = now if timeline.free_now(wanted, length) else None
            else:
                start = timeline.earliest(wanted, length)
                planned += start is None or start > now
            if start is not None:
                timeline.hold(wanted, start, None if length is None else start + length)
            if start is not None and start <= now:
                kept.append((job, demand))
                continue
            job.planned_start = start
            if job.reason != lic.REASON_LICENSES:
                job.reason = lic.REASON_LICENSES
                self._save(job)
        return kept
