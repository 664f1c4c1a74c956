"""A PMI client in pure Python (tests): PMI-2 by default, PMI-1 with ``--v1``.

Run as a task under ``srun --mpi=pmi2``: it connects through PMI_FD, puts a key of its rank,
fences, reads every rank's key and prints one line per exchange, ``rank R: ...``.  The unit
tests import ``frame``/``read_v2``/``read_v1`` to speak to a server directly.
"""

from __future__ import annotations

import os
import socket
import sys


def frame(text: str) -> bytes:
    data = text.encode()
    return f"{len(data):<6d}".encode() + data


def _exact(sock: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        part = sock.recv(count - len(data))
        if not part:
            raise EOFError("the server closed PMI_FD")
        data += part
    return data


def read_v2(sock: socket.socket) -> str:
    return _exact(sock, int(_exact(sock, 6).decode().strip())).decode()


def read_v1(sock: socket.socket) -> str:
    data = b""
    while not data.endswith(b"\n"):
        data += _exact(sock, 1)
    return data.decode().rstrip("\n")


def main() -> int:
    v1 = "--v1" in sys.argv
    sock = socket.socket(fileno=int(os.environ["PMI_FD"]))
    rank, size, jobid = int(os.environ["PMI_RANK"]), int(os.environ["PMI_SIZE"]), os.environ["PMI_JOBID"]
    out: list[str] = []

    def ask(text: str) -> str:
        if v1:
            sock.sendall(text.encode() + b"\n")
            reply = read_v1(sock)
        else:
            sock.sendall(frame(text))
            reply = read_v2(sock)
        out.append(reply)
        return reply

    if v1:
        ask("cmd=init pmi_version=1 pmi_subversion=1")
        ask("cmd=get_maxes")
        ask(f"cmd=get kvsname={jobid} key=PMI_process_mapping")
        for rounds in range(2):  # two fences: the second must see the second round's puts
            ask(f"cmd=put kvsname={jobid} key=r{rounds}-{rank} value=v{rounds}-{rank}")
            ask("cmd=barrier_in")
            values = [ask(f"cmd=get kvsname={jobid} key=r{rounds}-{r}").rsplit("value=", 1)[-1] for r in range(size)]
            print(f"rank {rank}: round {rounds}: {' '.join(values)}", flush=True)
        ask("cmd=finalize")
    else:
        sock.sendall(b"cmd=init pmi_version=2 pmi_subversion=0\n")
        out.append(read_v1(sock))
        ask(f"cmd=fullinit;pmijobid={jobid};pmirank={rank};threaded=FALSE;")
        ask("cmd=info-getjobattr;key=PMI_process_mapping;")
        ask(f"cmd=kvs-put;key=k{rank};value=val{rank};")
        ask("cmd=kvs-fence;")
        values = [ask(f"cmd=kvs-get;jobid={jobid};srcid=-1;key=k{r};").split("value=")[-1].rstrip(";")
                  for r in range(size)]
        print(f"rank {rank}: {' '.join(values)}", flush=True)
        ask("cmd=finalize;")
    for line in out:
        print(f"rank {rank}: {line}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
