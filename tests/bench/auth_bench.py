#!/usr/bin/env python3
"""What authentication costs one command: sbatch latency with auth/local and auth/munge.

In one run, on this machine:

* a credential made and checked in-process (KeyAuth's HMAC; MungeAuth's two round
  trips to munged), per message;
* the median wall time of ``sbatch --wrap true`` (a whole command: start-up, credential,
  request, reply and its check) against a plurm cluster with ``AuthType=auth/local`` and
  against one with ``AuthType=auth/munge`` (a private munged, as the tests start it);
* the same against the real Slurm when one answers on this machine
  (../shared/slurm-anchor/setup.sh; its sbatch in /usr/bin, with auth/munge).

Needs root (munged and the multi-user cluster run as root, as in CI).  Prints
``name value unit`` lines and the ratios.  Run: ``python tests/bench/auth_bench.py``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from mungetest import start_munge_cluster, start_munged  # noqa: E402
from plurmtest import command, start_cluster  # noqa: E402

RUNS = int(os.environ.get("AUTH_BENCH_RUNS", "30"))
REAL_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


def per_message_us(plugin, rounds: int = 2000) -> tuple[float, float]:
    from plurm.wire.auth import message_digest

    digest = message_digest(b"x" * 200)
    start = time.perf_counter()
    creds = [plugin.credential(digest) for _ in range(rounds)]
    made = time.perf_counter() - start
    start = time.perf_counter()
    for cred in creds:
        plugin.verify(cred, digest)
    checked = time.perf_counter() - start
    return made / rounds * 1e6, checked / rounds * 1e6


def sbatch_latency(argv: list[str], env: dict[str, str], cwd: str) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        proc = subprocess.run(argv + ["--wrap", "true", "-o", "/dev/null", "-H"], env=env, cwd=cwd,
                              capture_output=True, text=True, timeout=60)
        times.append(time.perf_counter() - start)
        if proc.returncode != 0:
            raise SystemExit(f"{argv[0]} failed: {proc.stderr}")
    return statistics.median(times) * 1000


def cancel_held(env: dict[str, str], scancel: list[str]) -> None:
    subprocess.run(scancel + ["--state=PENDING", "-u", "root"], env=env, capture_output=True, timeout=60)


def main() -> int:
    if os.geteuid() != 0:
        print("auth_bench: needs root (munged and the multi-user cluster run as root)", file=sys.stderr)
        return 2
    from plurm.wire.auth import KeyAuth, new_key
    from plurm.wire.auth_munge import MungeAuth

    results: dict[str, float] = {}
    munged = start_munged()
    base = Path(tempfile.mkdtemp(prefix="plurm-authbench-"))
    local = start_cluster(base, nodes=1, cpus=2, memory=1000)
    munge = start_munge_cluster(munged, nodes=1)
    try:
        results["key_credential_us"], results["key_verify_us"] = per_message_us(KeyAuth(new_key()))
        mplugin = MungeAuth({"socket": str(munged.socket)})
        results["munge_credential_us"], results["munge_verify_us"] = per_message_us(mplugin, 500)
        results["plurm_sbatch_local_ms"] = sbatch_latency(command("sbatch"), local.env, str(base))
        results["plurm_sbatch_munge_ms"] = sbatch_latency(command("sbatch"), munge.env, str(munge.dir))
        cancel_held(local.env, command("scancel"))
        cancel_held(munge.env, command("scancel"))
        real_env = dict(os.environ, PATH=REAL_PATH)
        real_env.pop("SLURM_CONF", None)
        ping = subprocess.run(["/usr/bin/scontrol", "ping"], env=real_env, capture_output=True, text=True)
        if ping.returncode == 0 and "UP" in ping.stdout:
            results["slurm_sbatch_munge_ms"] = sbatch_latency(["/usr/bin/sbatch"], real_env, "/tmp")
            cancel_held(real_env, ["/usr/bin/scancel"])
        else:
            print("bench: the real Slurm is not running here (../shared/slurm-anchor/setup.sh): skipped it",
                  file=sys.stderr)
    finally:
        munge.stop()
        local.down()
        munged.stop()
    for name, value in results.items():
        print(f"{name} {value:.1f} {'us' if name.endswith('_us') else 'ms'}")
    print(f"ratio_munge_over_local_sbatch {results['plurm_sbatch_munge_ms'] / results['plurm_sbatch_local_ms']:.2f}")
    if "slurm_sbatch_munge_ms" in results:
        print(f"ratio_plurm_munge_over_slurm_sbatch "
              f"{results['plurm_sbatch_munge_ms'] / results['slurm_sbatch_munge_ms']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
