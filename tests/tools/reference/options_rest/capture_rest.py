#!/usr/bin/env python3
"""Regenerate captures.jsonl: every vector of rest_vectors.py run on the real Slurm 22.05.

Run where the real Slurm answers (its commands in /usr/bin, /etc/slurm/slurm.conf), holding the
anchor's lock: ``python3 tests/tools/reference/options_rest/capture_rest.py [ID...]`` (ids: recapture those only).  Each line is one
vector with the real command's ``rc``, ``stdout``, ``stderr``, the job's output (``output``:
sbatch's output file, srun's and salloc's stdout) and ``show``: the SHOW_FIELDS of ``scontrol
show job`` for the job it made (``None`` when it made none).  Raw: the test normalises job ids.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from rest_vectors import BASE_ENV, ENV_CMD, FILES, SHOW_FIELDS, VECTORS  # noqa: E402

REAL_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
JOB_ID = re.compile(r"(?:Submitted batch job |job allocation |job )(\d+)")


def command_line(vec: dict) -> list[str]:
    """The same command line for both sides."""
    if vec["cmd"] == "sbatch":
        extra = ["-H"] if vec["held"] else ([] if "--wait" in vec["opts"] else ["--wait"])
        return ["sbatch", "-J", "optrest", "-o", "job.out", *extra, *vec["opts"], "--wrap", ENV_CMD]
    return [vec["cmd"], "-J", "optrest", "-N1", *vec["opts"], "sh", "-c", ENV_CMD]


def show_fields(text: str) -> dict[str, str]:
    pairs = dict(m.groups() for m in re.finditer(r"(?:^|\s)([A-Za-z/:-]+)=(\S*)", text))
    return {k: pairs[k] for k in SHOW_FIELDS if k in pairs}


def main() -> int:
    env = dict(BASE_ENV, PATH=REAL_PATH)
    rows = []
    with tempfile.TemporaryDirectory(prefix="optrest") as cwd:
        for name, text in FILES.items():
            Path(cwd, name).write_text(text)
        only = set(sys.argv[1:])  # vector ids: recapture those only, keep the other rows
        for vec in VECTORS:
            if only and vec["id"] not in only:
                continue
            out_file = Path(cwd, "job.out")
            out_file.unlink(missing_ok=True)
            try:
                proc = subprocess.run(command_line(vec), capture_output=True, text=True, env=env, cwd=cwd,
                                      stdin=subprocess.DEVNULL, timeout=25)
                rc, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
            except subprocess.TimeoutExpired as exc:
                rc, stdout, stderr = 124, exc.stdout or "", exc.stderr or ""
                stdout = stdout.decode() if isinstance(stdout, bytes) else stdout
                stderr = stderr.decode() if isinstance(stderr, bytes) else stderr
            found = JOB_ID.search(stdout + stderr)
            show = None
            if found:
                job = found.group(1)
                shown = subprocess.run(["scontrol", "show", "job", job], capture_output=True, text=True, env=env)
                show = show_fields(shown.stdout)
                subprocess.run(["scancel", job], env=env)
            output = out_file.read_text() if vec["cmd"] == "sbatch" and out_file.exists() else \
                (stdout if vec["cmd"] != "sbatch" else "")
            rows.append(dict(vec, rc=rc, stdout=stdout, stderr=stderr, output=output, show=show))
            print(vec["id"], rc, stderr.strip()[:200], file=sys.stderr)
    if only:
        kept = {r["id"]: r for r in map(json.loads, (HERE / "captures.jsonl").read_text().splitlines())}
        kept.update({r["id"]: r for r in rows})
        rows = [kept[v["id"]] for v in VECTORS if v["id"] in kept]
    (HERE / "captures.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
