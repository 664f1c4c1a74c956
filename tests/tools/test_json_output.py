"""--json and --yaml on squeue, sinfo, sacct, sshare and scontrol show job|node|partition.

Against a real local cluster with a GPU node and running (with a step), pending, completed and
failed jobs: every output is validated against the OpenAPI schema of its data_parser version
(slurmrestd's specs, kept in tests/tools/reference/openapi/ by its extract.py), and its key
values are compared with what the same command prints as text.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest
import yaml
from openapi_schema_validator import OAS30Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

from plurm.grammar.hostlist import expand
from plurm.rest.openapi import mend_required
from plurm.tools.dataparser import DEFAULT_VERSION, VERSIONS
from plurmtest import Cluster, start_cluster, wait_for

SPECS = Path(__file__).parent / "reference" / "openapi"


@lru_cache(maxsize=None)
def _registry(version: str) -> Registry:
    spec = json.loads((SPECS / f"{version}.json").read_text())
    mend_required(spec)
    return Registry().with_resource("spec", Resource.from_contents(spec, default_specification=DRAFT4))


def validate(obj: dict, version: str, schema: str) -> None:
    """Every error of ``obj`` against the version's ``schema`` (e.g. openapi_job_info_resp)."""
    validator = OAS30Validator({"$ref": f"spec#/components/schemas/{version}_{schema}"},
                               registry=_registry(version))
    errors = [f"{list(e.absolute_path)}: {e.message[:160]}" for e in validator.iter_errors(obj)]
    assert not errors, f"{schema} {version}: {len(errors)} errors, first: {errors[:5]}"


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory):
    """A 2-node cluster with 2 GPUs a node, and one job in each state the outputs show."""
    base = tmp_path_factory.mktemp("json")
    c = start_cluster(base, nodes=2, cpus=4, memory=4000, gres="gpu:2")
    work = base / "work"
    work.mkdir()
    try:
        done = c.sbatch("-o", "/dev/null", "--wrap", "true", cwd=work)
        failed = c.sbatch("-o", "/dev/null", "--wrap", "exit 3", cwd=work)
        c.wait_state(done, "COMPLETED")
        c.wait_state(failed, "FAILED")
        running = c.sbatch("-o", "/dev/null", "--gres=gpu:1", "-n2", "--wrap", "srun -n1 sleep 300", cwd=work)
        held = c.sbatch("-o", "/dev/null", "--hold", "--wrap", "true", cwd=work)
        c.wait_state(running, "RUNNING")

        def step_started() -> bool:
            reply = c.request("acct_query", {"job_ids": [str(running)], "users": [], "states": [],
                                             "start_time": None, "end_time": None})
            return any(s["step_id"] == "0" for s in reply.get("steps", []))

        wait_for(step_started, what="the srun step of the running job")
        yield c, {"done": done, "failed": failed, "running": running, "held": held}
    finally:
        c.down()


def _json(c: Cluster, *args: str) -> dict:
    proc = c.run(*args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _envelope(obj: dict, version: str) -> None:
    assert obj["errors"] == [] and obj["warnings"] == []
    assert obj["meta"]["plugin"]["data_parser"] == f"data_parser/{version}"


# ----------------------------------------------------------------------------- squeue
@pytest.mark.parametrize("version", VERSIONS)
def test_squeue_json_validates_and_matches_the_table(jobs, version):
    c, ids = jobs
    obj = _json(c, "squeue", f"--json={version}", "-t", "all")
    validate(obj, version, "openapi_job_info_resp")
    _envelope(obj, version)
    text = c.run("squeue", "-h", "-t", "all", "-o", "%i %T %D %N", check=True).stdout.split("\n")
    table = {line.split()[0]: line.split()[1:] for line in text if line}
    got = {str(j["job_id"]): j for j in obj["jobs"]}
    assert set(got) == set(table)
    for job_id, (state, node_count, *nodes) in table.items():
        job = got[job_id]
        assert job["job_state"][0] == state
        assert job["node_count"]["number"] == int(node_count)
        if job["nodes"]:
            assert job["nodes"] == nodes[0]
    running = got[str(ids["running"])]
    assert len(running["gres_detail"]) == 1 and running["gres_detail"][0].startswith("gpu:1(IDX:")
    assert "gres/gpu=1" in running["tres_alloc_str"]
    assert running["job_resources"]["nodes"]["allocation"][0]["cpus"]["count"] == 2
    assert got[str(ids["held"])]["state_reason"] == "JobHeldUser" and got[str(ids["held"])]["hold"]
    assert got[str(ids["failed"])]["exit_code"]["return_code"]["number"] == 3
    assert got[str(ids["failed"])]["exit_code"]["status"] == ["ERROR"]
    assert running["time_limit"]["infinite"] is True  # MaxTime=INFINITE, no --time


def test_squeue_json_default_filters_as_the_table(jobs):
    """Without -t: pending and running jobs only, as the table; the default version is v0.0.44."""
    c, ids = jobs
    obj = _json(c, "squeue", "--json")
    assert obj["meta"]["plugin"]["data_parser"] == f"data_parser/{DEFAULT_VERSION}" == "data_parser/v0.0.44"
    assert obj["meta"]["command"] == ["squeue", "--json"]
    assert sorted(j["job_id"] for j in obj["jobs"]) == sorted([ids["running"], ids["held"]])


def test_squeue_json_unknown_job(jobs):
    c, _ = jobs
    proc = c.run("squeue", "--json", "-j", "999999")
    assert proc.returncode == 1
    obj = json.loads(proc.stdout)
    validate(obj, DEFAULT_VERSION, "openapi_job_info_resp")
    assert obj["jobs"] == [] and [e["error_number"] for e in obj["errors"]] == [2017]


def test_yaml_is_the_same_object(jobs):
    c, ids = jobs
    for args in (("squeue", "-t", "all"), ("scontrol", "show", "node"), ("sacct",), ("sinfo",), ("sshare",)):
        as_json = _json(c, *args, "--json")
        proc = c.run(*args, "--yaml")
        assert proc.returncode == 0, proc.stderr
        as_yaml = yaml.safe_load(proc.stdout)
        for obj in (as_json, as_yaml):
            obj["meta"].pop("command")
            obj.pop("last_update", None), obj.pop("last_backfill", None)
            for node in obj.get("nodes", []):  # (sampled between the two runs)
                for key in ("cpu_load", "free_mem", "last_busy"):
                    node.pop(key)
            for line in obj.get("sinfo", []):
                line["cpus"].pop("load"), line["memory"].pop("free")
            for job in obj.get("jobs", []):  # a running job's elapsed time moves on
                job.get("time", {}).pop("elapsed", None)
                for step in job.get("steps", []):
                    step["time"].pop("elapsed")
        assert as_yaml == as_json, args


# ----------------------------------------------------------------------------- scontrol
@pytest.mark.parametrize("version", VERSIONS)
def test_scontrol_show_job_json_both_forms(jobs, version):
    c, ids = jobs
    job_id = str(ids["running"])
    before = _json(c, "scontrol", f"--json={version}", "show", "job", job_id)
    after = _json(c, "scontrol", "show", "job", job_id, f"--json={version}")  # (Slurm's getopt permutes)
    for obj in (before, after):
        validate(obj, version, "openapi_job_info_resp")
        _envelope(obj, version)
        assert [j["job_id"] for j in obj["jobs"]] == [ids["running"]]
    text = dict(word.split("=", 1) for word in
                c.run("scontrol", "-o", "show", "job", job_id, check=True).stdout.split() if "=" in word)
    job = after["jobs"][0]
    assert job["job_state"] == [text["JobState"]]
    assert job["nodes"] == text["NodeList"]
    assert job["tres_alloc_str"].startswith(text["TRES"])
    assert job["user_name"] + f"({job['user_id']})" == text["UserId"]
    assert job["standard_output"] == text["StdOut"]


@pytest.mark.parametrize("version", VERSIONS)
def test_scontrol_show_node_and_partition_json(jobs, version):
    c, _ = jobs
    nodes = _json(c, "scontrol", "show", "node", f"--json={version}")
    validate(nodes, version, "openapi_nodes_resp")
    _envelope(nodes, version)
    parts = _json(c, "scontrol", "show", "partition", f"--json={version}")
    validate(parts, version, "openapi_partition_resp")
    _envelope(parts, version)
    for node in nodes["nodes"]:
        text = dict(word.split("=", 1) for word in
                    c.run("scontrol", "-o", "show", "node", node["name"], check=True).stdout.split() if "=" in word)
        assert node["gres"] == text["Gres"] == "gpu:2"
        assert node["tres"].startswith(text["CfgTRES"]) and node["tres"].endswith("gres/gpu=2")
        assert node["alloc_cpus"] == int(text["CPUAlloc"]) and node["cpus"] == int(text["CPUTot"])
        assert "+".join(node["state"]) == text["State"]
    assert sorted(n["name"] for n in nodes["nodes"]) == ["n1", "n2"]
    (part,) = parts["partitions"]
    text = dict(word.split("=", 1) for word in
                c.run("scontrol", "-o", "show", "partition", check=True).stdout.split() if "=" in word)
    assert part["name"] == text["PartitionName"]
    assert part["cpus"]["total"] == int(text["TotalCPUs"]) and part["nodes"]["configured"] == text["Nodes"]
    assert part["tres"]["configured"] == text["TRES"]
    assert part["maximums"]["time"]["infinite"] is (text["MaxTime"] == "UNLIMITED")


def test_scontrol_json_errors(jobs):
    c, _ = jobs
    proc = c.run("scontrol", "show", "job", "999999", "--json")
    assert proc.returncode == 1
    obj = json.loads(proc.stdout)
    validate(obj, "v0.0.44", "openapi_job_info_resp")
    assert obj["jobs"] == []
    assert [(e["error_number"], e["error"]) for e in obj["errors"]] == [(2017, "Invalid job id specified")]
    proc = c.run("scontrol", "show", "node", "nosuchnode", "--yaml")
    assert proc.returncode == 1
    obj = yaml.safe_load(proc.stdout)
    assert obj["nodes"] == [] and obj["errors"][0]["error"] == "Invalid node name specified"
    proc = c.run("scontrol", "show", "partition", "nosuch", "--json")
    assert proc.returncode == 1 and json.loads(proc.stdout)["errors"][0]["error_number"] == 2000
    proc = c.run("scontrol", "--json", "show", "config")  # (refused, not answered as text)
    assert proc.returncode == 1 and proc.stdout == "" and "JSON output of show config" in proc.stderr


def test_scontrol_interactive_json_holds_for_its_line(jobs):
    c, _ = jobs
    proc = c.run("scontrol", input="show partition --json\nshow partition\n")
    assert proc.returncode == 0, proc.stderr
    obj, end = json.JSONDecoder().raw_decode(proc.stdout)
    assert [p["name"] for p in obj["partitions"]] == ["debug"]
    assert proc.stdout[end:].lstrip().startswith("PartitionName=debug")


# ----------------------------------------------------------------------------- sinfo
@pytest.mark.parametrize("version", VERSIONS)
def test_sinfo_json_lines_as_the_table(jobs, version):
    """slurmrestd has no sinfo object: each line's partition is checked against partition_info,
    the envelope against its schemas, and the lines against sinfo's own table."""
    c, _ = jobs
    obj = _json(c, "sinfo", f"--json={version}")
    _envelope(obj, version)
    validate({"partitions": [line["partition"] for line in obj["sinfo"]], "last_update": {"number": 0},
              "meta": obj["meta"], "errors": obj["errors"], "warnings": obj["warnings"]},
             version, "openapi_partition_resp")
    text = c.run("sinfo", "-h", "-o", "%P %D %T %N %C", check=True).stdout.split("\n")
    rows = [line.split() for line in text if line]
    assert len(rows) == len(obj["sinfo"])
    for (part, count, state, nodelist, cpus), line in zip(rows, obj["sinfo"]):
        assert line["partition"]["name"] == part.rstrip("*")
        assert line["nodes"]["total"] == int(count) and line["nodes"]["nodes"] == expand(nodelist)
        assert state.upper().startswith(line["node"]["state"][0]), (state, line["node"]["state"])
        cpu = line["cpus"]
        assert "/".join(str(cpu[k]) for k in ("allocated", "idle", "other", "total")) == cpus
        assert line["gres"]["total"] == "gpu:2"


# ----------------------------------------------------------------------------- sacct
@pytest.mark.parametrize("version", VERSIONS)
def test_sacct_json_jobs_and_steps_as_the_table(jobs, version):
    c, ids = jobs
    obj = _json(c, "sacct", f"--json={version}")
    validate(obj, version, "openapi_slurmdbd_jobs_resp")
    _envelope(obj, version)
    assert obj["meta"]["plugin"]["accounting_storage"] == "accounting_storage/slurmdbd"
    text = c.run("sacct", "-n", "-P", "-o", "JobIDRaw,State,AllocTRES,ExitCode", check=True).stdout.split("\n")
    rows = {r.split("|")[0]: r.split("|")[1:] for r in text if r}
    listed = {}
    for job in obj["jobs"]:
        listed[str(job["job_id"])] = job
        for step in job["steps"]:
            listed[step["step"]["id"]] = step
    assert set(listed) == set(rows)
    for key, (state, tres, exit_code) in rows.items():
        item = listed[key]
        current = item["state"]["current"] if "." not in key else item["state"]
        assert current[0] == state.split()[0]
        got = ",".join(f"{t['type']}{'/' + t['name'] if t['name'] else ''}={t['count']}"
                       for t in item["tres"]["allocated"])
        assert got == ",".join(p if not p.startswith("mem=") else f"mem={int(p[4:-1]) * (1024 if p.endswith('G') else 1)}"
                               for p in tres.split(",") if p), key
        code, sig = exit_code.split(":")
        if item["exit_code"]["status"] != ["PENDING"]:
            assert item["exit_code"]["return_code"]["number"] == int(code)
    assert [s["step"]["id"] for s in listed[str(ids["running"])]["steps"]] == \
        [f"{ids['running']}.batch", f"{ids['running']}.0"]
    assert listed[str(ids["failed"])]["exit_code"]["return_code"]["number"] == 3


# ----------------------------------------------------------------------------- sshare
@pytest.mark.parametrize("version", VERSIONS)
def test_sshare_json(jobs, version):
    c, _ = jobs
    obj = _json(c, "sshare", f"--json={version}")
    validate(obj, version, "openapi_shares_resp")
    _envelope(obj, version)
    text = c.run("sshare", "-h", check=True).stdout.split("\n")
    names = [line.split()[0] for line in text if line]
    accounts = [s["name"] for s in obj["shares"]["shares"] if s["type"] == ["ASSOCIATION"]]
    assert accounts == [n for n in names if n in accounts] and accounts[0] == "root"
    assert obj["shares"]["shares"][0]["parent"] == ""


# ----------------------------------------------------------------------------- options
@pytest.mark.parametrize("command", [("squeue",), ("sinfo",), ("sacct",), ("sshare",), ("scontrol", "show", "job")])
def test_unknown_data_parser_version_is_refused(jobs, command):
    c, _ = jobs
    proc = c.run(*command, "--json=v0.0.20")
    assert proc.returncode == 1 and proc.stdout == ""
    assert "Unable to find data_parser plugin: v0.0.20" in proc.stderr
    listing = c.run(*command, "--json=list")
    assert listing.returncode == 0
    assert [line.split()[-1] for line in listing.stdout.splitlines()[1:]] == [f"data_parser/{v}" for v in VERSIONS]


# ----------------------------------------------------------------------------- builders alone
# Records in states the cluster above does not reach, as the controller sends them (fields at
# their default left out): the builders' objects still validate in every version.
_SPEC = {"name": "edge", "work_dir": "/tmp", "user": "u1", "user_id": 1001, "group": "g1", "group_id": 1001}
EDGE_JOBS = [
    {"job_id": 40, "spec": dict(_SPEC, array_spec="1-9%2", array_max_running=2), "array_job_id": 40,
     "array_pending": [3, 4, 5, 9], "reason": "JobArrayTaskLimit", "submit_time": 1.0e9},
    {"job_id": 41, "spec": dict(_SPEC, mem_per_node=2048, time_limit=5, exc_nodes=["n2"], req_nodes=["n1"],
                                dependency="afterok:40", nice=10, batch=False), "state": "CANCELLED",
     "exit_code": 0, "exit_signal": 9, "start_time": 1.0e9 + 5, "end_time": 1.0e9 + 60, "nodes": ["n1"],
     "cpus": [2], "mem": [2048], "time_limit": 5, "cancel_uid": 0},
    {"job_id": 42, "spec": dict(_SPEC), "state": "SUSPENDED", "start_time": 1.0e9, "nodes": ["n1", "n2"],
     "cpus": [1, 1], "suspend_time": 1.0e9 + 9, "restarts": 2, "held_by": None},
    {"job_id": 43, "spec": dict(_SPEC), "state": "TIMEOUT", "completing": True, "start_time": 1.0e9,
     "end_time": 1.0e9 + 61, "nodes": ["n3"], "cpus": [4], "exit_code": 0, "exit_signal": 15},
]
EDGE_NODES = [
    {"name": "n1", "state": "DOWN+DRAIN*", "reason": "broken fan", "reason_time": 1.0e9, "reason_user": "root"},
    {"name": "n2", "state": "IDLE+REBOOT_REQUESTED", "reboot_next": "DOWN", "features": ["a", "b"]},
    {"name": "n3", "state": "MIXED+COMPLETING", "alloc_cpus": 3, "cpus": 4, "gres": ["gpu:a100:2"]},
    {"name": "n4", "state": "UNKNOWN*", "cpu_load": None, "free_mem": None},
]
EDGE_PARTS = [
    {"name": "short", "nodes": ["n1", "n2"], "max_time": 60, "default_time": 10, "max_nodes": 2, "min_nodes": 1,
     "def_mem_per_cpu": 500, "max_mem_per_cpu": 1000, "oversubscribe": "FORCE", "preempt_mode": "requeue",
     "allow_accounts": ["a1"], "allow_groups": ["g1"], "allow_qos": ["normal"], "state": "DRAIN",
     "hidden": True},
    {"name": "empty", "state": "INACTIVE"},
]
EDGE_STEPS = [
    {"job_id": 41, "step_id": "batch", "name": "batch", "nodes": ["n1"], "state": "CANCELLED",
     "exit_signal": 9, "start_time": 1.0e9 + 5, "end_time": 1.0e9 + 60},
    {"job_id": 41, "step_id": "0", "name": "a.out", "nodes": ["n1"], "ntasks": 2, "cpus": 2,
     "start_time": 1.0e9 + 6, "tres_usage_max": {"gres/gpuutil": "50"}},
]
EDGE_SHARES = [
    {"account": "root", "user": None, "raw_shares": 1, "norm_shares": 1.0, "raw_usage": 0, "effective_usage": 1.0,
     "fairshare": None, "depth": 0},
    {"account": "a1", "user": None, "raw_shares": 10, "norm_shares": 0.5, "raw_usage": 100,
     "effective_usage": 0.25, "fairshare": None, "depth": 1},
    {"account": "a1", "user": "u1", "raw_shares": 1, "norm_shares": 0.5, "raw_usage": 100,
     "effective_usage": 0.25, "fairshare": 0.75, "depth": 1},
    {"account": "a2", "user": None, "raw_shares": 10, "norm_shares": 0.5, "raw_usage": 0,
     "effective_usage": 0.0, "fairshare": None, "depth": 1},
]


@pytest.mark.parametrize("version", VERSIONS)
def test_builders_on_edge_records(version):
    from plurm.tools.dataparser import accounting, jobs, nodes, shares, values
    from plurm.tools.dataparser.versions import for_version

    meta = values.meta(version, ["test"], "c1")
    by_name = {n["name"]: n for n in EDGE_NODES}
    checks = [
        (jobs.job_info_resp(EDGE_JOBS, 1.0e9 + 100, meta, "c1"), "openapi_job_info_resp"),
        (nodes.nodes_resp(EDGE_NODES, 1.0e9, meta, "c1"), "openapi_nodes_resp"),
        (nodes.partition_resp(EDGE_PARTS, by_name, 1.0e9, meta, "c1"), "openapi_partition_resp"),
        (accounting.jobs_resp(EDGE_JOBS, EDGE_STEPS, 1.0e9 + 100, meta, "c1"), "openapi_slurmdbd_jobs_resp"),
        (shares.shares_resp(EDGE_SHARES, meta, "c1"), "openapi_shares_resp"),
    ]
    for obj, schema in checks:
        validate(for_version(obj, version), version, schema)
    job_info = {j["job_id"]: j for j in checks[0][0]["jobs"]}
    assert job_info[40]["array_task_string"] == "3-5,9%2" and not job_info[40]["array_task_id"]["set"]
    # A cancelled job keeps 0:0 (scontrol's ExitCode); the signal shows on its batch step.
    assert job_info[41]["exit_code"]["status"] == ["SUCCESS"]
    batch = checks[3][0]["jobs"][1]["steps"][0]
    assert batch["step"]["id"] == "41.batch" and batch["exit_code"]["signal"]["name"] == "KILL"
    assert job_info[43]["exit_code"]["status"] == ["SIGNALED"] and job_info[43]["exit_code"]["signal"]["name"] == "TERM"
    assert job_info[43]["job_state"] == ["TIMEOUT", "COMPLETING"]
    states = {n["name"]: n["state"] for n in checks[1][0]["nodes"]}
    assert states == {"n1": ["DOWN", "DRAIN", "NOT_RESPONDING"], "n2": ["IDLE", "REBOOT_REQUESTED"],
                      "n3": ["MIXED", "COMPLETING"], "n4": ["UNKNOWN", "NOT_RESPONDING"]}
    short = checks[2][0]["partitions"][0]
    assert short["maximums"]["time"]["number"] == 60 and short["maximums"]["oversubscribe"]["flags"] == ["force"]
    parents = [(s["name"], s["parent"]) for s in checks[4][0]["shares"]["shares"]]
    assert parents == [("root", ""), ("a1", "root"), ("u1", "a1"), ("a2", "root")]
