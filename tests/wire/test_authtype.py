"""AuthType selection: the built-ins by name, a package's plugin through the hook."""

from __future__ import annotations

import os

import pytest

from plurm.plugins import manager as plugin_manager
from plurm.plugins.hookspecs import hookimpl
from plurm.plugins.types import AuthTypePlugin
from plurm.wire import auth, authtype, envelope


class _SiteAuth:
    """A site's credential plugin: a key of its own, every sender is uid 4321."""

    name = "auth/site"

    def __init__(self, key_path: str, auth_info: dict[str, str]) -> None:
        self.inner = auth.KeyAuth(auth_info["secret"].encode())

    def credential(self, digest: bytes) -> bytes:
        return self.inner.credential(digest)

    def verify(self, credential: bytes, digest: bytes, allow_replay: bool = False) -> auth.Verified:
        self.inner.verify(credential, digest)
        return auth.Verified(4321, 4321)


class _SitePackage:
    @hookimpl
    def plurm_register_auth_types(self):
        return [AuthTypePlugin(name="site", factory=_SiteAuth, description="test")]


@pytest.fixture
def site_plugin():
    plugin_manager.reset_plugin_manager()
    plugin_manager.get_plugin_manager().register(_SitePackage(), name="site-auth", package="site-auth")
    yield
    plugin_manager.reset_plugin_manager()


def test_a_packages_auth_type_is_selected_by_name(site_plugin) -> None:
    plugin = authtype.load("auth/site", "/nonexistent", "secret=s3cret")
    frames = envelope.seal(plugin, "ping", {})
    assert envelope.open_envelope(plugin, frames).sender == (4321, 4321)
    with pytest.raises(envelope.AuthError):  # another secret: not proven
        envelope.open_envelope(authtype.load("auth/site", "/x", "secret=other"), frames)


def test_unknown_auth_type_lists_the_valid_ones(site_plugin) -> None:
    with pytest.raises(auth.AuthError, match="auth/local, auth/munge, auth/site"):
        authtype.load("auth/nosuch", "/x")


def test_builtins_need_no_plugin_manager(tmp_path, monkeypatch) -> None:
    """The commands' start-up: auth/local resolves without pluggy's discovery."""
    monkeypatch.setattr(plugin_manager, "get_plugin_manager", lambda: pytest.fail("plugin manager loaded"))
    key = tmp_path / "slurm.key"
    key.write_bytes(auth.new_key())
    key.chmod(0o600)
    local = authtype.load(None, str(key))
    assert local.name == "auth/local" and local.owner == os.getuid()


def test_auth_info_is_parsed_as_slurm_writes_it() -> None:
    assert authtype.parse_auth_info("socket=/run/munge/munge.socket.2, ttl=60") == {
        "socket": "/run/munge/munge.socket.2", "ttl": "60"}
