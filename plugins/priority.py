"""plurm's built-in priority policies, registered as a plugin.

``PriorityType=priority/basic`` and ``priority/multifactor`` select them, through
the same hook a site's own policy package uses (``trylast=True``: a plugin of the
same name from a package would be a duplicate, reported as such).
"""

from __future__ import annotations

from plurm.plugins.hookspecs import hookimpl
from plurm.plugins.types import PriorityPlugin

BUILTIN_PRIORITY: tuple[PriorityPlugin, ...] = (
    PriorityPlugin(name="basic", factory="plurm.corescheduler.priority:BasicPriority",
                   description="first come, first served (Slurm's default)"),
    PriorityPlugin(name="multifactor", factory="plurm.corescheduler.priority:MultifactorPriority",
                   description="Slurm's multifactor formula: age, fair share, job size, partition, QOS"),
)


@hookimpl(trylast=True)
def plurm_register_priority_plugins() -> tuple[PriorityPlugin, ...]:
    return BUILTIN_PRIORITY
