"""Regenerate the schemas tests/tools/test_json_output.py validates against.

Reads slurmrestd's OpenAPI documents (../shared/reference/slurmrestd/v0.0.4x.json, Apache-2.0,
as published by SlinkyProject/slurm-client) and keeps, for each version, the schemas reachable
from the responses the commands print, with the document's info (license included).

    python tests/tools/reference/openapi/extract.py [SOURCE_DIR]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parents[4] / "shared" / "reference" / "slurmrestd"
RESPONSES = ("openapi_job_info_resp", "openapi_nodes_resp", "openapi_partition_resp",
             "openapi_slurmdbd_jobs_resp", "openapi_shares_resp")


def _refs(node):
    if isinstance(node, dict):
        if "$ref" in node:
            yield node["$ref"].rsplit("/", 1)[-1]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def extract(doc: dict, version: str) -> dict:
    schemas = doc["components"]["schemas"]
    keep: dict = {}
    todo = [f"{version}_{name}" for name in RESPONSES]
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        keep[name] = schemas[name]
        todo.extend(_refs(schemas[name]))
    return {"openapi": doc["openapi"], "info": doc["info"],
            "components": {"schemas": dict(sorted(keep.items()))}}


def main() -> None:
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else SOURCE
    for path in sorted(source.glob("v0.0.*.json")):
        version = path.stem
        out = extract(json.loads(path.read_text()), version)
        (HERE / path.name).write_text(json.dumps(out, indent=1, sort_keys=False) + "\n")
        print(f"{path.name}: {len(out['components']['schemas'])} schemas")


if __name__ == "__main__":
    main()
