"""A second host for tests: a network namespace joined to this one by a veth pair.

Everything stays on this machine: the pair's two addresses live only on its two ends
(one in the test's namespace, one here), and a cut is made so that nothing can leave by
another route: the far end's link goes down inside the namespace (which has no other
route) and, here, a ``prohibit`` route for the far address shadows the pair's own, so
packets for it are refused locally instead of following a default route.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass


class Unavailable(Exception):
    """This machine cannot make namespaces for the test (not root, no iproute2)."""


def _ip(*args: str, netns: str | None = None) -> None:
    cmd = ["ip", "netns", "exec", netns, "ip", *args] if netns else ["ip", *args]
    subprocess.run(cmd, check=True, capture_output=True, text=True)


@dataclass
class NetnsHost:
    name: str  # the namespace
    near: str  # this side's veth
    far: str  # the namespace's veth
    near_addr: str
    far_addr: str

    def exec_prefix(self) -> list[str]:
        """Run a command inside the namespace."""
        return ["ip", "netns", "exec", self.name]

    def cut(self) -> None:
        _ip("route", "add", "prohibit", f"{self.far_addr}/32")
        _ip("link", "set", self.far, "down", netns=self.name)

    def restore(self) -> None:
        _ip("link", "set", self.far, "up", netns=self.name)
        subprocess.run(["ip", "route", "del", "prohibit", f"{self.far_addr}/32"], capture_output=True)

    def remove(self) -> None:
        subprocess.run(["ip", "route", "del", "prohibit", f"{self.far_addr}/32"], capture_output=True)
        subprocess.run(["ip", "link", "del", self.near], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)


def _install_iproute2() -> None:
    """Debian's iproute2 (a fresh machine may lack it); the test runs as root here."""
    from debpkg import apt_install

    error = apt_install("iproute2")
    if shutil.which("ip") is None:
        raise Unavailable(f"iproute2's ip is not installed and apt-get failed: {error}")


def make_host(index: int = 0) -> NetnsHost:
    """A namespace ``plurmt<pid>`` with 10.231.<n>.2, joined to 10.231.<n>.1 here."""
    if os.geteuid() != 0:
        raise Unavailable("network namespaces need root (ip netns add)")
    if shutil.which("ip") is None:
        _install_iproute2()
    tag = f"{os.getpid() % 10000}{index}"
    subnet = (os.getpid() + index) % 250 + 1
    host = NetnsHost(name=f"plurmt{tag}", near=f"pvh{tag}", far=f"pvn{tag}",
                     near_addr=f"10.231.{subnet}.1", far_addr=f"10.231.{subnet}.2")
    try:
        _ip("netns", "add", host.name)
        _ip("link", "add", host.near, "type", "veth", "peer", "name", host.far)
        _ip("link", "set", host.far, "netns", host.name)
        _ip("addr", "add", f"{host.near_addr}/30", "dev", host.near)
        _ip("link", "set", host.near, "up")
        _ip("addr", "add", f"{host.far_addr}/30", "dev", host.far, netns=host.name)
        _ip("link", "set", host.far, "up", netns=host.name)
        _ip("link", "set", "lo", "up", netns=host.name)
    except subprocess.CalledProcessError as exc:
        host.remove()
        raise Unavailable(f"could not make a network namespace: {exc.stderr.strip()}") from None
    return host
