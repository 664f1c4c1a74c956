"""The error every refused request raises, in the core and the service layer alike."""

from __future__ import annotations


class RequestError(Exception):
    """A refused request; ``message`` is what Slurm's command prints after its prefix."""

    def __init__(self, message: str, code: str = "Error", detail: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.detail = detail
