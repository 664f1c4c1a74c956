"""``/openapi.json`` (and ``/openapi/v3``): slurmrestd's OpenAPI documents (rest/openapi/*.json,
Apache-2.0, as Slurm 25.05, 25.11 and 26.05 generate them) cut to the paths and methods plurmrestd
implements, with the schemas those reach, and the versions merged into one document as
slurmrestd serves them.  A generated client or schemathesis reads exactly what answers.
"""

from __future__ import annotations

import copy
import json
from functools import lru_cache
from pathlib import Path

SPEC_DIR = Path(__file__).parent / "openapi"
_COMPONENT = "#/components/schemas/"


def load(version: str) -> dict:
    return json.loads((SPEC_DIR / f"{version}.json").read_text())


def _refs(node: object, out: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_COMPONENT):
            out.add(ref[len(_COMPONENT):])
        for value in node.values():
            _refs(value, out)
    elif isinstance(node, list):
        for value in node:
            _refs(value, out)


def full_path(version: str, path: str) -> str:
    """A route table's path as the spec writes it for ``version``."""
    return path.replace("{version}", version) if path.startswith("/") else f"/slurm/{version}/{path}"


def mend_required(node: object) -> None:
    """Two habits of Slurm's generator that OpenAPI 3.0 readers stumble on, mended: ``"required":
    []`` (3.0 wants at least one entry) is removed, and a sub-object's required fields listed
    in its parent as ``"error/code"`` (a property of that name, which no answer has) move into
    the sub-object's own ``required``."""
    if isinstance(node, dict):
        req = node.get("required")
        if isinstance(req, list) and any(isinstance(r, str) and "/" in r for r in req):
            node["required"] = [r for r in req if "/" not in r]
            for r in req:
                head, slash, rest = r.partition("/")
                sub = node.get("properties", {}).get(head)
                if slash and isinstance(sub, dict) and "$ref" not in sub and "/" not in rest:
                    sub.setdefault("required", []).append(rest)
        if node.get("required") == []:
            del node["required"]
        for value in node.values():
            mend_required(value)
    elif isinstance(node, list):
        for value in node:
            mend_required(value)


def trimmed(version: str, implemented: list[tuple[str, str]]) -> dict:
    """The version's document with only ``implemented`` (method, path after /slurm/vX/, or a
    whole path with ``{version}``: ``/slurmdb/{version}/jobs/``)."""
    spec = load(version)
    paths: dict[str, dict] = {}
    for method, path in implemented:
        key = full_path(version, path)
        op = spec["paths"].get(key, {}).get(method.lower())
        if op is None:  # (a path of later versions only: v0.0.45's job/{job_id}/requeue; _document checks)
            continue
        paths.setdefault(key, {k: v for k, v in spec["paths"][key].items() if k == "parameters"})[method.lower()] = op
    schemas = spec["components"]["schemas"]
    wanted: set[str] = set()
    _refs(paths, wanted)
    todo = list(wanted)
    while todo:
        name = todo.pop()
        found: set[str] = set()
        _refs(schemas.get(name, {}), found)
        for ref in found - wanted:
            wanted.add(ref)
            todo.append(ref)
    out = {k: spec[k] for k in ("openapi", "info", "servers", "security", "tags") if k in spec}
    mend_required(paths)
    out["paths"] = paths
    out["components"] = {"schemas": {name: schemas[name] for name in sorted(wanted) if name in schemas},
                         "securitySchemes": spec["components"].get("securitySchemes", {})}
    mend_required(out["components"])
    return out


@lru_cache(maxsize=None)
def _methods(version: str) -> dict[str, frozenset[str]]:
    return {path: frozenset(ops) for path, ops in load(version)["paths"].items()}


def offers(version: str, method: str, path: str) -> bool:
    """Whether ``version``'s spec has ``method path`` (routes of later versions are served by those only)."""
    return method.lower() in _methods(version).get(full_path(version, path), frozenset())


@lru_cache(maxsize=None)
def _document(versions: tuple[str, ...], implemented: tuple[tuple[str, str], ...]) -> str:
    merged: dict = {}
    missing = [f"{m} {p}" for m, p in implemented if not any(offers(v, m, p) for v in versions)]
    if missing:
        raise KeyError(f"{', '.join(missing)}: in no spec of {', '.join(versions)}")
    for version in versions:
        doc = trimmed(version, list(implemented))
        if not merged:
            merged = copy.deepcopy(doc)
            continue
        merged["paths"].update(doc["paths"])
        merged["components"]["schemas"].update(doc["components"]["schemas"])
    merged.setdefault("info", {})["description"] = (
        "plurmrestd: the slurmrestd paths plurm implements (data_parser " + ", ".join(versions) + ")")
    return json.dumps(merged)


def document(versions: list[str], implemented: list[tuple[str, str]]) -> str:
    """The merged document's JSON text (built once)."""
    return _document(tuple(versions), tuple(implemented))
