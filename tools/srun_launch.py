"""What srun's node-side launch options ask of plurmd (LaunchTasks.launch).

The options that take effect where the tasks start rather than in srun — ``--task-prolog``,
``--task-epilog``, ``--slurmd-debug``, ``--bcast``, ``--compress``, ``--send-libs``,
``--bcast-exclude``, ``--accel-bind`` — travel to plurmd in one dict, read by the node agent;
srun itself does nothing with them.
"""

from __future__ import annotations

from typing import Any


def node_options(options: dict[str, Any]) -> dict[str, Any]:
    """The launch request's ``launch`` field for srun's parsed ``options``: none acted on yet."""
    return {}
