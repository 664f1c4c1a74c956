"""The mixins of ``ClusterCore`` that make sbatch's options act (issue 14): one per area.

Each area (reservations, licenses, mail, topology, binding, time and priority, MPI,
heterogeneous jobs, the rest) keeps its behaviour in a module of its own and adds its
mixin here, on its own line, so that core.py only calls it.
"""

from __future__ import annotations

# area imports, one line each (area: reservations, licenses, mail, topology, binding, timeprio, mpi, hetjob, rest)
from plurm.corescheduler.core_resv import AdvanceReservations  # area: reservations
from plurm.corescheduler.core_licenses import LicenseEffects  # area: licenses
from plurm.corescheduler.core_mail import MailEffects  # area: mail
from plurm.corescheduler.core_hetjob import HetJobs  # area: hetjob
from plurm.corescheduler.core_timeprio import TimePriority  # area: timeprio
from plurm.corescheduler.core_rest import RestOptions  # area: rest
from plurm.corescheduler.core_immediate import ImmediateJobs  # area: immediate
from plurm.corescheduler.core_reboot import JobReboot  # area: reboot
from plurm.corescheduler.core_external import ExternalJobs  # area: k8s (EXTERNAL_JOB, issue 16)


class OptionEffects(
    # area mixins, one line each
    TimePriority,  # area: timeprio
    HetJobs,  # area: hetjob
    LicenseEffects,  # area: licenses
    MailEffects,  # area: mail
    AdvanceReservations,  # area: reservations
    RestOptions,  # area: rest
    ImmediateJobs,  # area: immediate
    JobReboot,  # area: reboot
    ExternalJobs,  # area: k8s
):
    """What the issue-14 options do in the core; the areas' mixins are its bases."""
