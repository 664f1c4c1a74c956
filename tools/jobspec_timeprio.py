"""The time, priority and node-set options as JobSpec fields (issue 14, area timeprio).

tools/jobspec.build_spec calls ``timeprio_fields`` with the typed options of
tools/sbatch_cli.py; the controller acts on the fields (corescheduler/core_timeprio.py).
Plain values only: the commands do not import msgspec on their start-up path.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only (start-up cost)
    from typing import Any

# The option keys this module turns into JobSpec fields (tools/jobspec._HANDLED).
KEYS = {"time-min", "deadline", "priority", "prefer", "tmp", "overcommit", "spread-job", "use-min-nodes",
        "no-kill", "nodefile", "wait-all-nodes", "delay-boot"}


# sbatch's own bound on --priority (22.05.8, measured: "Priority must be < 4294967294", status 255).
PRIORITY_BOUND = 4294967294


def check_options(prog: str, typed: dict[str, Any]) -> None:
    """sbatch's checks of these options once all are read (tools/sbatch_cli._validate)."""
    from plurm.grammar.options import OptionError

    priority = typed.get("priority")
    if isinstance(priority, str) and priority.strip().isdigit() and int(priority) >= PRIORITY_BOUND:
        raise OptionError([f"{prog}: error: Priority must be < {PRIORITY_BOUND}"], 255)
    begin, deadline = typed.get("begin"), typed.get("deadline")
    if isinstance(begin, (int, float)) and isinstance(deadline, (int, float)) and begin > deadline:
        raise OptionError([f"{prog}: error: Incompatible begin and deadline time specification"], 1)


def timeprio_fields(options: dict[str, Any]) -> dict[str, Any]:
    """The JobSpec fields of the options present (an absent option leaves the default)."""
    fields: dict[str, Any] = {}
    time_min = options.get("time-min")
    if isinstance(time_min, int) and time_min > 0:  # 0 / UNLIMITED: no minimum (Slurm shows N/A)
        fields["time_min"] = time_min
    if isinstance(options.get("deadline"), (int, float)):
        fields["deadline"] = float(options["deadline"])
    priority = options.get("priority")
    if isinstance(priority, str) and priority.strip().upper() == "TOP":
        fields["priority_top"] = True
    elif isinstance(priority, str) and priority.strip().isdigit():
        # (a value that is no number is ignored, as 22.05.8's sbatch does: measured)
        fields["priority"] = int(priority.strip())
    if isinstance(options.get("prefer"), str) and options["prefer"]:
        fields["prefer"] = options["prefer"]
    if isinstance(options.get("tmp"), int) and options["tmp"] > 0:
        fields["tmp_disk"] = options["tmp"]
    for key, name in (("overcommit", "overcommit"), ("spread-job", "spread_job"),
                      ("use-min-nodes", "use_min_nodes"), ("no-kill", "no_kill")):
        if options.get(key) is True:
            fields[name] = True
    if options.get("wait-all-nodes") in (0, 1):
        fields["wait_all_nodes"] = options["wait-all-nodes"]
    if isinstance(options.get("delay-boot"), int):
        fields["delay_boot"] = options["delay-boot"]
    # -F/--nodefile: like --nodelist (grammar/options.py reads and expands the file); -w wins.
    if isinstance(options.get("nodefile"), list) and options["nodefile"] and not options.get("nodelist"):
        fields["req_nodes"] = list(dict.fromkeys(options["nodefile"]))  # a repeated name counts once
    return fields
