"""Regular expressions compiled on first use.

`import re` and compiling a module's patterns cost a few milliseconds, paid
by every command start-up even when the command never uses them (squeue
formats a queue without parsing a hostlist).  ``lazy(pattern)`` defers both
to the first match.
"""

from __future__ import annotations


class LazyPattern:
    __slots__ = ("_args", "_compiled")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._args = (pattern, flags)
        self._compiled = None

    def _get(self):
        if self._compiled is None:
            import re

            self._compiled = re.compile(*self._args)
        return self._compiled

    def __getattr__(self, name: str):
        return getattr(self._get(), name)


def lazy(pattern: str, flags: int = 0) -> LazyPattern:
    return LazyPattern(pattern, flags)


# re's flag values, for modules that do not import re at start-up.
DOTALL = 16
IGNORECASE = 2


class _LazyModule:
    """``re`` itself, imported at the first attribute used (``from lazyre import re``)."""

    def __getattr__(self, name: str):
        import re as module

        return getattr(module, name)


re = _LazyModule()
