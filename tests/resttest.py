"""What the REST tests share (tests/rest): HTTP calls, slurmrestd's schemas, the cluster
with plurmrestd that ``plurm cluster up --rest`` starts (the ``rest`` fixture is in
tests/rest/conftest.py)."""

from __future__ import annotations

import getpass
import json
import os
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from openapi_schema_validator import OAS30Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

from plurm.rest.openapi import mend_required
from plurmtest import Cluster, wait_for

SPECS = Path(__file__).resolve().parents[1] / "rest" / "openapi"
# ----------------------------------------------------------------------------- HTTP and schemas
VERSIONS = ("v0.0.43", "v0.0.44", "v0.0.45")


def call(url: str, method: str, path: str, token: str | None = None, user: str | None = None,
         bearer: bool = False, body: object = None, raw: bytes | None = None) -> tuple[int, dict]:
    """(HTTP status, decoded JSON body) of one request."""
    headers = {"Accept": "application/json"}
    if token is not None:
        if bearer:
            headers["Authorization"] = f"Bearer {token}"
        else:
            headers["X-SLURM-USER-TOKEN"] = token
    if user is not None:
        headers["X-SLURM-USER-NAME"] = user
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    if data is not None:
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, json.loads(reply.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


@lru_cache(maxsize=None)
def spec(version: str) -> dict:
    return json.loads((SPECS / f"{version}.json").read_text())


@lru_cache(maxsize=None)
def _registry(version: str) -> Registry:
    document = json.loads((SPECS / f"{version}.json").read_text())
    mend_required(document)
    return Registry().with_resource("spec", Resource.from_contents(document, default_specification=DRAFT4))


def response_schema(version: str, method: str, path: str) -> str:
    """The ``$ref`` of the 200 answer of ``method path`` (path after /slurm/vX/, as the spec;
    or a whole path with ``{version}``)."""
    full = path.replace("{version}", version) if path.startswith("/") else f"/slurm/{version}/{path}"
    op = spec(version)["paths"][full][method.lower()]
    return op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]


def validate(obj: dict, version: str, method: str, path: str) -> None:
    ref = response_schema(version, method, path).replace("#/", "spec#/")
    validator = OAS30Validator({"$ref": ref}, registry=_registry(version))
    errors = [f"{list(e.absolute_path)}: {e.message[:200]}" for e in validator.iter_errors(obj)]
    assert not errors, f"{method} {path} {version}: {len(errors)} errors, first: {errors[:5]}"

ME = getpass.getuser()


@dataclass
class Rest:
    cluster: Cluster
    url: str
    key: bytes
    work: Path

    def token(self, *args: str) -> str:
        out = self.cluster.run("scontrol", "token", *args, check=True).stdout
        assert re.fullmatch(r"SLURM_JWT=[\w-]+\.[\w-]+\.[\w-]+\n", out), out
        return out.strip().split("=", 1)[1]

    def log(self, name: str) -> str:
        return (self.cluster.dir / "log" / f"{name}.log").read_text(errors="replace")


@contextmanager
def rest_cluster(base: Path, nodes: int, cpus: int, memory: int, extra_conf: str) -> Iterator[Rest]:
    """A real local cluster with plurmrestd (``plurm cluster up --rest``), slurm.conf plus
    ``extra_conf``; stopped on the way out. Its work folder is ``base / "work"``."""
    from plurm.tools.localcluster import ClusterShape, LocalCluster

    local = LocalCluster(str(base / "cluster"))
    local.write_files(ClusterShape(nodes=nodes, cpus_per_node=cpus, memory_per_node=memory))
    conf = Path(local.conf_path)
    conf.write_text(conf.read_text() + extra_conf)
    env = dict(os.environ, SLURM_CONF=str(conf))
    env.pop("SLURM_JOB_ID", None)
    c = Cluster(Path(local.dir), conf, env)
    out = c.up("--rest").stdout
    try:
        found = re.search(r"^export SLURM_RESTD_URL=(http://127\.0\.0\.1:\d+)$", out, re.M)
        assert found, f"plurm cluster up --rest printed no URL: {out!r}"
        key_file = Path(local.dir) / "jwt_hs256.key"
        assert key_file.stat().st_mode & 0o077 == 0, "the JWT key is readable by others"
        work = base / "work"
        work.mkdir()
        yield Rest(c, found.group(1), key_file.read_bytes(), work)
    finally:
        c.down()


def get_job(rest: Rest, token: str, job_id: int, version: str = "v0.0.44") -> dict:
    status, body = call(rest.url, "GET", f"/slurm/{version}/job/{job_id}", token, bearer=True)
    assert status == 200, body
    validate(body, version, "GET", "job/{job_id}")
    assert [j["job_id"] for j in body["jobs"]] == [job_id]
    return body["jobs"][0]


def wait_job_state(rest: Rest, token: str, job_id: int, state: str) -> dict:
    seen: dict = {}

    def reached() -> bool:
        seen.update(get_job(rest, token, job_id))
        return seen["job_state"][0] == state

    wait_for(reached, 30, f"job {job_id} {state} (last: {seen.get('job_state')})")
    return seen
