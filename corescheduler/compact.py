"""Smaller job records for a controller that holds a million jobs (issue 17 item 3).

A msgspec Struct gives every list or dict field that was left at its default a fresh empty
container of its own: a queued job carries about fifteen of them (56 to 64 bytes each), and
the strings decoded from each submission (its name, directory, output pattern, host) are
copies of the same few values.  ``shrink`` makes a just-submitted job share one empty list
(and one empty dict) for those fields and one string object per distinct value, which is
about a third of a held job's own objects (tests/bench/million_bench.py measures it).

Sharing is safe only for fields the code replaces rather than changes in place: the
request (``JobSpec``, which array tasks already share whole) and the allocation lists of a
pending job (assigned when it starts: ``core._start``).  ``earlier_runs`` and ``events`` are
appended to, and stay the job's own.  Should any code still change a shared empty container
in place, the next submission logs it as the bug it is and empties the container again: the
jobs sharing it were all empty there, so each gets its right value back (the one change
meant for one job is lost) -- rather than every job carrying the change, or every later
submission refused.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from plurm.wire.model import Job

log = logging.getLogger("plurmctld")

_EMPTY_LIST: list[Any] = []
_EMPTY_DICT: dict[str, Any] = {}

# Left empty by most submissions; never changed in place (replaced when they change).
_SPEC_LISTS = ("req_nodes", "exc_nodes", "script_args", "array_indices", "gres_req", "mail_type", "hint",
               "gres_flags")
_SPEC_DICTS = ("environment", "other_options")
_JOB_LISTS = ("array_pending", "nodes", "cpus", "mem", "tasks", "gres_alloc")
# Text fields whose values repeat across many jobs: one object per distinct value.
_SPEC_TEXT = ("name", "work_dir", "stdout", "stderr", "submit_host", "account", "qos", "partition", "command")


def shrink(job: Job) -> None:
    """Share the empty containers and the repeated strings of a just-submitted job."""
    if _EMPTY_LIST or _EMPTY_DICT:
        log.error("BUG: a job's shared empty container was changed in place (%r %r): emptied again",
                  _EMPTY_LIST[:8], dict(list(_EMPTY_DICT.items())[:8]))
        _EMPTY_LIST.clear()
        _EMPTY_DICT.clear()
    spec = job.spec
    _share_empty(spec, _SPEC_LISTS, _EMPTY_LIST)
    _share_empty(spec, _SPEC_DICTS, _EMPTY_DICT)
    _share_empty(job, _JOB_LISTS, _EMPTY_LIST)
    for name in _SPEC_TEXT:
        value = getattr(spec, name)
        if type(value) is str and len(value) < 256:
            setattr(spec, name, sys.intern(value))


def _share_empty(record: Any, names: tuple[str, ...], shared: list[Any] | dict[str, Any]) -> None:
    """Each of ``names`` left empty, of exactly the shared one's type, becomes the shared one."""
    kind = type(shared)
    for name in names:
        value = getattr(record, name)
        if not value and value is not shared and type(value) is kind:
            setattr(record, name, shared)
