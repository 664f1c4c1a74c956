"""Debian packages the tests need (munge, postgresql, iproute2), installed when missing.

The fixtures call this as root only (CI runs as root); a fresh machine of this kind may lack
a package, so apt-get is tried three times (a mirror can be busy) before the caller gives up.
"""

from __future__ import annotations

import os
import subprocess
import time


def apt_install(package: str) -> str:
    """Install ``package``; "" when it worked, else apt-get's last words."""
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    error = ""
    for _ in range(3):
        subprocess.run(["apt-get", "-o", "DPkg::Lock::Timeout=300", "update", "-q"], env=env, capture_output=True)
        done = subprocess.run(["apt-get", "-o", "DPkg::Lock::Timeout=300", "install", "-y", "-q",
                               "--no-install-recommends", package], env=env, capture_output=True, text=True)
        if done.returncode == 0:
            return ""
        error = done.stderr[-500:]
        time.sleep(5)
    return error
