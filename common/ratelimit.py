"""Log lines at a bounded rate: a flood of junk must not become a flood of warnings.

Each kind of line (``key``) may be written ``burst`` times per ``window_s``; beyond
that lines of the kind are counted, not written: the first line held back says so
(one line), and the next line of the kind that is written says how many were
suppressed.  The daemons use it for what a remote
peer can trigger at will (unauthenticated or malformed messages, refusals).
"""

from __future__ import annotations

import logging
import time


class RateLimitedLog:
    def __init__(self, logger: logging.Logger, burst: int = 20, window_s: float = 60.0) -> None:
        self.logger = logger
        self.burst = burst
        self.window_s = window_s
        self._windows: dict[str, tuple[float, int, int]] = {}  # key -> (window start, written, suppressed)

    def warning(self, key: str, message: str, *args: object) -> bool:
        """Log ``message % args`` at WARNING unless ``key`` is over its rate; True when written."""
        now = time.monotonic()
        start, written, suppressed = self._windows.get(key, (now, 0, 0))
        if now - start >= self.window_s:
            start, written = now, 0
        if written >= self.burst:
            if not suppressed:
                self.logger.warning("more than %d %r messages in %d s: suppressing them for the rest of the window",
                                    self.burst, key, self.window_s)
            self._windows[key] = (start, written, suppressed + 1)
            return False
        if suppressed:
            message = f"{message} ({suppressed} similar messages suppressed)"
        self.logger.warning(message, *args)
        self._windows[key] = (start, written + 1, 0)
        return True
