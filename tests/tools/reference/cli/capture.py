#!/usr/bin/env python3
"""Regenerate captures.jsonl: every vector of vectors.py run on the real Slurm 22.05.

Run where the real Slurm answers (its commands in /usr/bin, /etc/slurm/slurm.conf):
``python3 tests/tools/reference/cli/capture.py``.  Each line is one vector with the real
command's ``rc``, ``stdout`` and ``stderr`` (raw: tests/tools/test_cli_differential.py
normalises what is host- or time-specific on both sides).  The jobs it submits are held
and cancelled at the end.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from vectors import BASE_ENV, FILES, HELD_JOB, VECTORS  # noqa: E402

REAL_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
SUBMITTED = re.compile(r"^(?:Submitted batch job )?(\d+)(?:;\S+)?$", re.M)


def run(cmd: str, argv: list[str], env: dict[str, str], cwd: str) -> subprocess.CompletedProcess:
    full = dict(BASE_ENV, PATH=REAL_PATH, **env)
    try:
        return subprocess.run([cmd, *argv], capture_output=True, text=True, env=full, cwd=cwd,
                              stdin=subprocess.DEVNULL, timeout=30)
    except subprocess.TimeoutExpired as exc:
        return subprocess.CompletedProcess([cmd, *argv], 124, exc.stdout or "", exc.stderr or "")


def main() -> int:
    out_path = HERE / "captures.jsonl"
    submitted: list[str] = []
    with tempfile.TemporaryDirectory(prefix="b13cli") as cwd:
        for name, text in FILES.items():
            Path(cwd, name).write_text(text)
        held = run("sbatch", HELD_JOB, {}, cwd)
        job = held.stdout.strip().split(";")[0]
        if held.returncode != 0 or not job.isdigit():
            print(f"could not submit the held job: {held.stderr}", file=sys.stderr)
            return 1
        submitted.append(job)
        rows = []
        try:
            for vec in VECTORS:
                argv = [a.replace("{JOB}", job) for a in vec["argv"]]
                proc = run(vec["cmd"], argv, vec["env"], cwd)
                if vec["cmd"] == "sbatch" and proc.returncode == 0 and "--test-only" not in argv:
                    submitted += SUBMITTED.findall(proc.stdout)
                rows.append(dict(vec, rc=proc.returncode, stdout=proc.stdout, stderr=proc.stderr,
                                 job=job if vec["needs"] == "job" else None))
        finally:
            subprocess.run(["scancel", *submitted], env=dict(BASE_ENV, PATH=REAL_PATH))
    with out_path.open("w") as fh:
        for row in rows:
            fh.write(json.dumps(row, sort_keys=True) + "\n")
    print(f"{len(rows)} vectors captured into {out_path} (cancelled {' '.join(submitted)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
