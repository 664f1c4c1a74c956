"""Shared fixtures: a real local cluster (real daemons, real processes, real files)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from plurmtest import Cluster, start_cluster


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One 4-node cluster (4 CPUs, 4000 MB each) shared by the tests of a session."""
    c = start_cluster(tmp_path_factory.mktemp("plurm"))
    try:
        yield c
    finally:
        c.down()


@pytest.fixture
def fresh_cluster(tmp_path: Path) -> Iterator[Cluster]:
    """A cluster of the test's own, for tests that kill or restart daemons."""
    c = start_cluster(tmp_path, nodes=2, cpus=2, memory=2000)
    try:
        yield c
    finally:
        c.down()
        shutil.rmtree(c.dir / "spool", ignore_errors=True)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    d = tmp_path / "work"
    d.mkdir()
    return d


@pytest.fixture(scope="session")
def test_users():
    """Real users plurmta and plurmtb (created with useradd as root; skipped otherwise)."""
    from osusers import Unavailable, ensure_test_users

    try:
        return ensure_test_users()
    except Unavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def munged():
    """A private munged (Debian's munge, installed by the fixture as root; skipped otherwise)."""
    from mungetest import Unavailable, start_munged

    try:
        daemon = start_munged()
    except Unavailable as exc:
        pytest.skip(str(exc))
    try:
        yield daemon
    finally:
        daemon.stop()


@pytest.fixture(scope="module")
def munge_cluster(munged, test_users):
    """A 2-node cluster with AuthType=auth/munge, daemons as root, for the test users."""
    from mungetest import start_munge_cluster

    cluster = start_munge_cluster(munged)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def postgres():
    """A private PostgreSQL on 127.0.0.1 (tests/pgtest.py; installed and run as root, skipped otherwise)."""
    from pgtest import Unavailable, start_postgres

    try:
        server = start_postgres()
    except Unavailable as exc:
        pytest.skip(str(exc))
    try:
        yield server
    finally:
        server.close()
