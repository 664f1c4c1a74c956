"""Capture what the real Slurm 22.05's interactive and waiting forms print and exit with, for
tests/integration/test_interactive.py (run on a machine with a real Slurm; see INDEX.md).

    env PATH=/usr/sbin:/usr/bin:/sbin:/bin python3 capture.py [-A ACCOUNT] > captures.txt

Job ids, step ids in messages and host names are normalised to J, S and HOST."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time

ACCOUNT = sys.argv[sys.argv.index("-A") + 1] if "-A" in sys.argv else "anchor"
WORK = f"/tmp/interactive-capture-{os.getpid()}"


def norm(text: str) -> str:
    text = re.sub(r"\b(job |allocation |StepId=|JobId=|STEP )(\d+)", r"\1J", text)
    text = re.sub(r"\b(StepId=J|STEP J)\.(\d+)", r"\1.S", text)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", "TIME", text)
    text = re.sub(r"--jobid=\d+|sattach \d+", lambda m: re.sub(r"\d+", "J", m.group()), text)
    return text.replace(os.uname().nodename, "HOST")


def plain(argv: list[str], stdin: str | None = None, env: dict | None = None) -> None:
    proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, cwd=WORK, timeout=120,
                          env=dict(os.environ, **(env or {})))
    print(f"=== {' '.join(argv)}" + (f"  <<< {stdin!r}" if stdin is not None else ""))
    print(f"rc={proc.returncode}")
    print("--- stdout\n" + norm(proc.stdout) + "--- stderr\n" + norm(proc.stderr), end="")


def on_pty(argv: list[str], script: list[tuple[str, bytes]]) -> None:
    """argv on a terminal; script: (wait for this text, then send these bytes)."""
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(WORK)
        os.execvp(argv[0], argv)
    out = b""

    def read_until(text: bytes, limit: float) -> None:
        nonlocal out
        end = time.monotonic() + limit
        while text not in out and time.monotonic() < end:
            if select.select([fd], [], [], 0.2)[0]:
                try:
                    data = os.read(fd, 4096)
                except OSError:
                    return
                if not data:
                    return
                out += data
    for wait, send in script:
        read_until(wait.encode(), 30)
        os.write(fd, send)
    read_until(b"\0never\0", 60)
    _, status = os.waitpid(pid, 0)
    print(f"=== (pty) {' '.join(argv)}  script={script!r}")
    print(f"rc={os.waitstatus_to_exitcode(status)}")
    print("--- terminal\n" + norm(out.decode(errors="replace")).replace("\r\n", "\\r\\n\n"), end="")


def main() -> None:
    os.makedirs(WORK, exist_ok=True)
    a = f"-A{ACCOUNT}"
    for body in ("exit 3", "kill -9 $$", "true"):
        plain(["sbatch", a, "--wait", "-o", "/dev/null", "--wrap", body])
    plain(["sbatch", a, "--wait", "--array=0-2", "-o", "/dev/null", "--wrap", "exit $SLURM_ARRAY_TASK_ID"])
    plain(["srun", a, "-n1", "cat"], stdin="hello\n")
    plain(["srun", a, "-n2", "-l", "--input=1", "cat"], stdin="a\nb\n")
    plain(["srun", a, "-n1", "-i", "nonexist.txt", "cat"])
    plain(["srun", a, "-n1", "-o", "/nonexist/x.txt", "echo", "hi"])
    plain(["srun", a, "-n2", "-o", "0", "sh", "-c", "echo out $SLURM_PROCID; echo err >&2"])
    plain(["srun", a, "--jobid=99999", "hostname"])
    plain(["salloc", a, "-N1", "sh", "-c", "exit 3"])
    plain(["salloc", a, "-N1", "nonexistentcmd"])
    with open(f"{WORK}/k9.sh", "w") as f:
        f.write("#!/bin/sh\nkill -9 $$\n")
    os.chmod(f"{WORK}/k9.sh", 0o755)
    plain(["salloc", a, "-N1", "./k9.sh"])
    plain(["salloc", a, "-N1"], stdin="echo in-shell; exit 4\n", env={"SHELL": "/bin/sh"})
    plain(["salloc", a, "-N1", "srun", "sh", "-c", "exit 7"])
    on_pty(["srun", a, "--pty", "bash", "-c", "tty; stty size"], [])
    on_pty(["srun", a, "--pty", "bash", "-c", 'trap "echo got INT; exit 5" INT; echo ready; sleep 300 & wait'],
           [("ready", b"\x03")])
    on_pty(["srun", a, "--begin=now+1hour", "-n1", "hostname"], [("queued and waiting for resources", b"\x03")])
    on_pty(["salloc", a, "--begin=now+1hour", "-n1", "hostname"], [("queued and waiting for resources", b"\x03")])
    on_pty(["srun", a, "-n2", "bash", "-c", "echo ready; exec sleep 300"],
           [("ready\r\nready", b"\x03"), ("running", b"\x03")])
    # srun --jobid into a running batch job that uses all of its node's CPUs
    job = subprocess.run(["sbatch", a, "--parsable", "-N1", "--exclusive", "-o", "/dev/null", "--wrap", "sleep 120"],
                         capture_output=True, text=True, check=True).stdout.strip()
    while "RUNNING" not in subprocess.run(["squeue", "-h", "-o", "%T", "-j", job], capture_output=True,
                                          text=True).stdout:
        time.sleep(0.5)
    plain(["srun", f"--jobid={job}", "sh", "-c", "echo $SLURM_STEP_ID"])
    plain(["srun", f"--jobid={job}", "--overlap", "sh", "-c", "echo $SLURM_STEP_ID"])
    for args in ([f"{job}.77"], ["99999.0"], [job], ["abc"], [], [f"{job}.0", "x"]):
        plain(["sattach", *args])
    subprocess.run(["scancel", job])
    sattach_stdin(a)


def sattach_stdin(a: str) -> None:
    """sattach's stdin (and its end) to task 1 of a running srun whose own input goes on."""
    os.makedirs(WORK, exist_ok=True)
    srun = subprocess.Popen(["srun", a, "-N2", "-n2", "-l", "cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, cwd=WORK)
    step_job = ""
    while not step_job:
        time.sleep(0.5)
        rows = subprocess.run(["squeue", "-h", "-u", str(os.getuid()), "-o", "%i %j"], capture_output=True,
                              text=True).stdout.split("\n")
        step_job = max((r.split()[0] for r in rows if r.endswith(" cat")), key=int, default="")  # ours: the newest
    time.sleep(2)  # the step's tasks started
    sattach = subprocess.Popen(["sattach", "-l", "--input-filter=1", f"{step_job}.0"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=WORK)
    assert sattach.stdin is not None and srun.stdin is not None and srun.stdout is not None
    sattach.stdin.write("hello from sattach\n")
    sattach.stdin.close()
    time.sleep(2)
    srun.stdin.write("from srun\n")
    srun.stdin.close()
    out = srun.stdout.read()
    print(f"=== sattach -l --input-filter=1 J.0  <<< 'hello from sattach\\n' (then srun's stdin: 'from srun\\n', end)")
    print(f"rc={sattach.wait()}")
    print("--- stdout\n" + sattach.stdout.read() + "--- stderr\n" + sattach.stderr.read(), end="")
    print(f"=== srun {a} -N2 -n2 -l cat  (the same step)")
    print(f"rc={srun.wait()}")
    print("--- stdout\n" + out, end="")


if __name__ == "__main__":
    main()
