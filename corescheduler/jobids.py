"""Array task id lists as scontrol, scancel and sacct take them: "1-5,7,10-20:2%4"."""

from __future__ import annotations

from plurm.corescheduler.errors import RequestError


def parse_task_ids(text: str) -> set[int]:
    text = text.strip("[]")
    wanted: set[int] = set()
    for part in text.split(","):
        part = part.split("%", 1)[0]
        if not part:
            continue
        low, _, high = part.partition("-")
        try:
            if high:
                step = 1
                if ":" in high:
                    high, step_text = high.split(":", 1)
                    step = int(step_text)
                wanted.update(range(int(low), int(high) + 1, step))
            else:
                wanted.add(int(low))
        except ValueError:
            raise RequestError("Invalid job id specified", "InvalidJobId") from None
    return wanted

