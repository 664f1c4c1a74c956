"""Errors a backend raises to say *why* it found nothing."""

from __future__ import annotations

__all__ = ["BackendUnavailable"]


class BackendUnavailable(RuntimeError):
    """The vendor library or its configuration is absent on this node.

    Not a failure: ``detect("auto")`` lists it under ``skipped`` rather than
    ``errors``, because a site without NVIDIA software is a normal site.
    """
