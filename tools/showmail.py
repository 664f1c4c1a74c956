"""``scontrol show job``'s mail line: ``MailUser=carol MailType=BEGIN,END`` (only when --mail-type
selects something), in 22.05.8's order of the flags (tests/integration/reference/mail/show_job_mailtype.txt).
"""

from __future__ import annotations

from typing import Any

MAIL_ORDER = ("ARRAY_TASKS", "INVALID_DEPEND", "BEGIN", "END", "FAIL", "REQUEUE", "STAGE_OUT", "TIME_LIMIT_50",
              "TIME_LIMIT_80", "TIME_LIMIT_90", "TIME_LIMIT")


def mail_lines(spec: dict[str, Any]) -> list[str]:
    types = set(spec.get("mail_type") or ())
    if not types:
        return []
    listed = ",".join(t for t in MAIL_ORDER if t in types)
    return [f"MailUser={spec.get('mail_user') or spec.get('user', 'root')} MailType={listed}"]
