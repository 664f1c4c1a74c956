"""srun's binding options as srun itself reads them (--cpu-bind, --mem-bind, --gpu-bind, -m, -c):
what it says of a binding the cluster cannot do, the =help answers, and what the nodes need
(LaunchTasks.binding; nodeagent/stepbind.py).  Moved out of tools/srun.py as it was.
"""

from __future__ import annotations

import sys
from typing import Any


def _distribution_word(text: str | None) -> str | None:
    """SLURM_DISTRIBUTION as 22.05.8 sets it: the -m value, plane=N as "plane"."""
    import re

    return re.sub(r"^plane=\d+", "plane", text, flags=re.IGNORECASE) if text else text


def _binding_notes(options: dict[str, Any], conf: str) -> list[str]:
    """srun's own words on a binding the cluster cannot do (22.05.8, TaskPlugin=task/none)."""
    from plurm.wire.client import conf_value

    if not options.get("cpu-bind"):
        return []
    plugins = [p.strip().lower() for p in (conf_value(conf, "TaskPlugin") or "task/none").split(",")]
    return [] if "task/affinity" in plugins or "affinity" in plugins else \
        ["srun: cluster configuration lacks support for cpu binding"]


def _bind_help(options: dict[str, Any]) -> int | None:
    """22.05.8's answers to --mem-bind=help (its help, exit 255) and --cpu-bind=help (without
    task/affinity: not supported; with it: its help; exit 1), on stdout."""
    words = {w.strip().lower() for key in ("cpu-bind", "mem-bind") for w in str(options.get(key) or "").split(",")}
    if "help" not in words:
        return None
    from plurm.tools.frontend import _text
    from plurm.wire.client import conf_path

    if "help" in {w.strip().lower() for w in str(options.get("cpu-bind") or "").split(",")}:
        if _binding_notes({"cpu-bind": "help"}, conf_path()):
            print("CPU bind options not supported with current configuration")
            return 1
        sys.stdout.write(_text("help_cpu_bind.txt"))
        return 1
    sys.stdout.write(_text("help_mem_bind.txt"))
    return 255


def _binding(options: dict[str, Any], step_info: dict[str, Any]) -> dict[str, Any]:
    """What the nodes need to place the tasks (nodeagent/stepbind.py)."""
    binding = {"cpu_bind": options.get("cpu-bind"), "mem_bind": options.get("mem-bind"),
               "gpu_bind": options.get("gpu-bind"), "distribution": options.get("distribution"),
               "cpus_per_task": step_info.get("cpus_per_task") or options.get("cpus-per-task")}
    return {k: v for k, v in binding.items() if isinstance(v, (str, int)) and not isinstance(v, bool)}
