"""Fixtures for the simulator's tests."""

from __future__ import annotations

import os
import sys

import pytest

# The suite imports in importlib mode (no test folder on sys.path): the tests here share
# simhelpers.py through this folder.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from simhelpers import HEADER, swf_line  # noqa: E402


@pytest.fixture
def tiny_trace(tmp_path):
    """A 6-job trace on 2 nodes x 4 CPUs, written to a file."""
    rows = [swf_line(1, 0, 8, 100, 600), swf_line(2, 10, 4, 50, 600), swf_line(3, 20, 2, 30, 600),
            swf_line(4, 30, 4, 40, 600, user=2), swf_line(5, 40, 1, 5, -1, user=2),
            swf_line(6, 50, 2, 0, 600, status=5)]
    path = tmp_path / "tiny.swf"
    path.write_text(HEADER.format(nodes=2, procs=8) + "\n".join(rows) + "\n")
    return path
