"""``plurm cluster up --rest``: plurmrestd on the local cluster, and tokens for it.

The first ``--rest`` gives the cluster what plurmrestd needs: an HS256 key
(``DIR/jwt_hs256.key``, mode 0600) and ``AuthAltTypes=auth/jwt`` with
``AuthAltParameters=jwt_key=`` in its slurm.conf (the controller reads the key when it
starts: a running one is restarted, its jobs kept, as after any restart).  Then plurmrestd
runs on a free loopback port; its URL is kept in ``DIR/run/plurmrestd.url`` and printed.
``plurm cluster down`` stops it with the other daemons.
"""

from __future__ import annotations

import os
import signal
import time
import urllib.error
import urllib.request

REST_MODULE = "plurm.rest.plurmrestd"
KEY_NAME = "jwt_hs256.key"


def ensure_jwt(cluster) -> bool:
    """Key and slurm.conf lines for auth/jwt; True when slurm.conf was changed."""
    from plurm.wire.client import conf_value

    if (conf_value(cluster.conf_path, "AuthAltTypes") or "").lower().find("auth/jwt") >= 0:
        return False
    key = os.path.join(cluster.dir, KEY_NAME)
    if not os.path.exists(key):
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(os.urandom(32).hex().encode() + b"\n")
    with open(cluster.conf_path, "a") as handle:
        handle.write(f"# plurm cluster up --rest: tokens for plurmrestd (scontrol token)\n"
                     f"AuthAltTypes=auth/jwt\nAuthAltParameters=jwt_key={key}\n")
    return True


def restart_controller(cluster, timeout: float = 15.0) -> None:
    """Stop a running plurmctld (cluster.up starts it again with the new slurm.conf)."""
    from plurm.tools.localcluster import CTLD_MODULE

    pid = cluster._alive("plurmctld", CTLD_MODULE)
    if pid is None:
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and os.path.exists(f"/proc/{pid}"):
        try:
            with open(f"/proc/{pid}/stat") as handle:
                if handle.read().rsplit(")", 1)[-1].split()[0] == "Z":
                    break
        except OSError:
            break
        time.sleep(0.05)


def url_file(cluster) -> str:
    return os.path.join(cluster.run_dir, "plurmrestd.url")


def start(cluster, timeout: float = 30.0) -> str:
    """plurmrestd's URL, starting it if it does not run."""
    from plurm.tools.localcluster import free_port_block

    if cluster._alive("plurmrestd", REST_MODULE) is not None and os.path.exists(url_file(cluster)):
        with open(url_file(cluster)) as handle:
            return handle.read().strip()
    port = free_port_block(1)
    url = f"http://127.0.0.1:{port}"
    cluster._spawn("plurmrestd", REST_MODULE, [f"127.0.0.1:{port}"])
    with open(url_file(cluster), "w") as handle:
        handle.write(url + "\n")
    wait_ready(url, timeout, os.path.join(cluster.log_dir, "plurmrestd.log"))
    return url


def wait_ready(url: str, timeout: float, log_path: str) -> None:
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/openapi.json", timeout=2.0) as reply:
                if reply.status == 200:
                    return
        except (urllib.error.URLError, OSError) as exc:
            last = str(exc)
        time.sleep(0.1)
    raise RuntimeError(f"plurmrestd did not answer at {url} within {timeout:.0f}s: {last} (log {log_path})")
