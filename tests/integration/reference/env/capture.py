#!/usr/bin/env python3
"""Regenerate slurm-22.05.json: every job kind of jobkinds.py run on the real Slurm 22.05.

Run on the anchor (../shared/slurm-anchor/setup.sh with ACCOUNTING=dbd NNODES=4: nodes n[1-4]
x 4 CPUs, 4 fake GPUs each, DefMemPerCPU=256, account `anchor` for root), as root, from any
directory: ``python3 tests/integration/reference/env/capture.py [WORKDIR]``.  The real commands
are found through PATH=/usr/sbin:/usr/bin:/sbin:/bin (plurm's are not on it).  It waits for
each job's dump, so it takes about a minute on an idle anchor.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import jobkinds  # noqa: E402

PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
CONF = "/etc/slurm/slurm.conf"


def main() -> int:
    work = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="envcapture-")) / "work"
    shutil.rmtree(work, ignore_errors=True)
    env = jobkinds.submit_environment(PATH, CONF)
    version = subprocess.run(["sbatch", "--version"], env=env, capture_output=True, text=True).stdout.strip()
    results = jobkinds.run_kinds(work, env)
    me = pwd.getpwuid(os.getuid())
    facts = {
        "host": socket.gethostname().split(".", 1)[0], "submit_dir": str(work), "conf": CONF,
        "ctld_port": _conf_value("SlurmctldPort") or "6817", "path_prefix": "",
        "uid": str(me.pw_uid), "gid": str(me.pw_gid), "user": me.pw_name, "home": me.pw_dir,
        "login": jobkinds.login_environment(me.pw_name), "submitted": env,
    }
    out = {"slurm": version, "facts": facts, "kinds": results}
    (HERE / "slurm-22.05.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"{len(results)} kinds captured from {version} into {HERE / 'slurm-22.05.json'}")
    return 0


def _conf_value(key: str) -> str | None:
    for line in Path(CONF).read_text().splitlines():
        name, _, value = line.partition("=")
        if name.strip().lower() == key.lower():
            return value.split("#", 1)[0].strip()
    return None


if __name__ == "__main__":
    sys.exit(main())
