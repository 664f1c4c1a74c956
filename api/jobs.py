"""Jobs through the Python API: submit (idempotent with a key, or many in one call), get,
list, cancel.  docs/api.md has the examples.

A submission is built by sbatch's own parser (tools/sbatch_cli.py) and spec builder
(tools/jobspec.py): ``submit(script, ["-N", "2"])`` is ``sbatch -N 2`` of that script, its
``#SBATCH`` lines and ``SBATCH_*`` variables included, so a job means the same either way.

Idempotency: pass ``key=`` (1..128 characters of ``A-Za-z0-9._:@/+=-``).  If the reply is
lost (a timeout), submit again with the same key: the controller answers with the job the
first attempt created (``SubmitResult.duplicate``), never a second one.  Keys are per user
(the verified uid) and kept as long as the job record (corescheduler/idempotency.py).

Bulk: ``submit_many`` sends prepared submissions, up to 10,000 (and 12 MiB) per message;
the controller takes a message in one turn and makes it durable in one commit before it
answers.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from plurm.grammar.options import OptionError
from plurm.wire.client import ClientError, ClientSettings, Connection, read_settings

BATCH_LIMIT = 10_000  # the controller's bound per submit_jobs message (corescheduler/idempotency.py)
# Bytes per submit_jobs message: under the 16 MiB a controller takes per frame (wire/hardening.py).
BATCH_BYTES = 12 * 1024 * 1024
_encode = msgspec.json.Encoder().encode


@dataclass(frozen=True)
class SubmitResult:
    """One submission's answer: the job id, sbatch's warnings, whether a retry found it."""

    job_id: int | None
    warnings: builtins.list[str] = field(default_factory=builtins.list)
    duplicate: bool = False  # the key named a job already: this is the job the first attempt made
    error: ClientError | None = None  # (submit_many only: this entry was refused, the others stand)

    @classmethod
    def from_reply(cls, reply: Mapping[str, Any]) -> SubmitResult:
        if "error" in reply:
            return cls(None, error=ClientError(reply["error"], reply.get("code", "Error")))
        return cls(int(reply["job_id"]), builtins.list(reply.get("warnings", ())), bool(reply.get("duplicate")))


def prepare(script: str | None = None, args: Sequence[str] = (), *, wrap: str | None = None,
            key: str | None = None, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The ``submit_job`` body for ``sbatch ARGS`` of ``script`` (or ``--wrap``).

    ``environ`` is the environment the job gets (and the ``SBATCH_*`` inputs); default: this
    process's.  Raises ClientError (code "InvalidOption") with sbatch's message for bad options.
    """
    from plurm.tools.jobspec import build_spec
    from plurm.tools.sbatch_cli import parse_sbatch

    argv = builtins.list(args) + (["--wrap", wrap] if wrap is not None else [])
    env = dict(os.environ if environ is None else environ)
    try:
        req = parse_sbatch(argv, env, script.encode() if script is not None else None)
    except OptionError as exc:
        raise ClientError("; ".join(exc.lines) or "invalid options", "InvalidOption") from None
    default_name = "wrap" if wrap is not None else os.path.basename(req.script_path) if req.script_path else "sbatch"
    spec = build_spec(req.options, default_name=default_name, environ=env, batch=True, script=req.script_text,
                      command=os.path.abspath(req.script_path) if req.script_path else None,
                      script_args=req.script_args, raw_options=req.raw_options)
    body: dict[str, Any] = {"spec": spec}
    components = [build_spec(opts, default_name=default_name, environ={}, batch=False, raw_options=raw,
                             command=spec.get("command"))
                  for opts, raw in zip(req.components[1:], req.raw_components[1:])]
    if components:
        body["components"] = components
    if req.options.get("test-only"):
        body["test_only"] = True
    if key is not None:
        body["key"] = key
    return body


class Client:
    """One connection to the controller, reused for many calls (``with Client() as c: ...``).

    ``conf``: a slurm.conf path (default: SLURM_CONF, as the commands find it).  ``timeout``:
    seconds per request; on a timeout the request may or may not have been acted on — use
    keys on submissions, and retry.
    """

    def __init__(self, conf: str | None = None, timeout: float | None = None,
                 settings: ClientSettings | None = None) -> None:
        settings = settings or read_settings(conf)
        self._conn = Connection(settings) if timeout is None else Connection(settings, timeout=timeout)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._conn.close()

    def request(self, msg_type: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._conn.request(msg_type, body)

    # ------------------------------------------------------------------ submission
    def submit(self, script: str | None = None, args: Sequence[str] = (), *, wrap: str | None = None,
               key: str | None = None, environ: Mapping[str, str] | None = None) -> SubmitResult:
        """Submit one batch job; ``key`` makes a retry return the job the first attempt made."""
        body = prepare(script, args, wrap=wrap, key=key, environ=environ)
        return SubmitResult.from_reply(self.request("submit_job", body))

    def submit_many(self, bodies: Iterable[Mapping[str, Any]]) -> builtins.list[SubmitResult]:
        """Many ``prepare``d submissions: BATCH_LIMIT jobs or BATCH_BYTES per message, each
        message one controller turn and one commit.  Results are in order; a refused entry
        has ``error`` set and the rest still stand.  Retry a batch that timed out with the
        same keys: the jobs it made come back as duplicates."""
        results: builtins.list[SubmitResult] = []
        batch: builtins.list[bytes] = []
        size = 0
        for body in bodies:
            encoded = _encode(body)
            if batch and (len(batch) == BATCH_LIMIT or size + len(encoded) > BATCH_BYTES):
                results.extend(self._submit_batch(batch))
                batch, size = [], 0
            batch.append(encoded)
            size += len(encoded) + 1
        if batch:
            results.extend(self._submit_batch(batch))
        return results

    def _submit_batch(self, batch: Sequence[bytes]) -> builtins.list[SubmitResult]:
        reply = self._conn.request("submit_jobs", b'{"jobs":[' + b",".join(batch) + b"]}")
        return [SubmitResult.from_reply(r) for r in reply["results"]]

    # ------------------------------------------------------------------ queries and control
    def get(self, job_id: int | str) -> dict[str, Any]:
        """One job's record (finished ones too, until purged); ClientError InvalidJobId if none."""
        reply = self.request("job_info", {"job_ids": [str(job_id)], "all_states": True})
        jobs = reply.get("jobs", [])
        if not jobs:
            raise ClientError("Invalid job id specified", "InvalidJobId")
        return jobs[0] if len(jobs) == 1 else {"array": jobs, **jobs[0]}

    def list_jobs(self, *, users: Sequence[str] = (), states: Sequence[str] = (), partitions: Sequence[str] = (),
                  names: Sequence[str] = (), job_ids: Sequence[int | str] = (),
                  all_states: bool = False) -> builtins.list[dict[str, Any]]:
        """Jobs as squeue selects them (default: the active ones; ``all_states`` for recent ends)."""
        body = {"users": builtins.list(users), "states": builtins.list(states),
                "partitions": builtins.list(partitions), "names": builtins.list(names),
                "job_ids": [str(j) for j in job_ids], "all_states": all_states}
        return self.request("job_info", body).get("jobs", [])

    def cancel(self, job_id: int | str, *, signal: int | None = None) -> None:
        """scancel JOB (or ``scancel -s SIGNAL``); ClientError with Slurm's message if refused."""
        body: dict[str, Any] = {"job_ids": [str(job_id)]}
        if signal is not None:
            body["signal"] = signal
        reply = self.request("cancel_job", body)
        for result in reply.get("results", []):
            if "error" in result:
                raise ClientError(result["error"], result.get("code", "Error"))


# One-call forms: a connection per call (use a Client for many calls).
def submit(script: str | None = None, args: Sequence[str] = (), *, wrap: str | None = None, key: str | None = None,
           environ: Mapping[str, str] | None = None, conf: str | None = None) -> SubmitResult:
    with Client(conf) as client:
        return client.submit(script, args, wrap=wrap, key=key, environ=environ)


def submit_many(bodies: Iterable[Mapping[str, Any]], conf: str | None = None) -> builtins.list[SubmitResult]:
    with Client(conf) as client:
        return client.submit_many(bodies)


def get(job_id: int | str, conf: str | None = None) -> dict[str, Any]:
    with Client(conf) as client:
        return client.get(job_id)


def list_jobs(conf: str | None = None, **selection: Any) -> builtins.list[dict[str, Any]]:
    with Client(conf) as client:
        return client.list_jobs(**selection)


def cancel(job_id: int | str, *, signal: int | None = None, conf: str | None = None) -> None:
    with Client(conf) as client:
        client.cancel(job_id, signal=signal)
