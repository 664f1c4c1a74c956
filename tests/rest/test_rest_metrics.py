"""plurmrestd's /metrics, /metrics/<kind> and the /livez, /readyz, /healthz probes, against a
real cluster (the ``rest`` fixture: plurm cluster up --rest).  Every answer is parsed with
prometheus_client's OpenMetrics parser, which refuses text that is not valid OpenMetrics."""

from __future__ import annotations

import os
import signal

import urllib.error
import urllib.request

from prometheus_client.openmetrics.parser import text_string_to_metric_families

from plurmtest import wait_for
from resttest import ME, VERSIONS, Rest, call, validate

KINDS = ("jobs", "jobs-users-accts", "nodes", "partitions", "scheduler")


def get(rest: Rest, path: str, token: str | None = None) -> tuple[int, str, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(rest.url + path, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, reply.headers.get("Content-Type", ""), reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type", ""), exc.read().decode()


def scrape(rest: Rest, path: str = "/metrics") -> dict[str, list]:
    """name -> samples of a valid OpenMetrics answer (the parser raises on invalid text)."""
    status, ctype, text = get(rest, path)
    assert status == 200, text
    assert ctype.startswith("application/openmetrics-text"), ctype
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def value(families: dict[str, list], name: str, **labels: str) -> float:
    samples = [s for s in families[name] if all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(samples) == 1, f"{name}{labels}: {samples}"
    return samples[0].value


def test_every_endpoint_is_valid_openmetrics_without_a_token(rest: Rest) -> None:
    whole = scrape(rest)
    for kind in KINDS:
        part = scrape(rest, f"/metrics/{kind}")
        assert part and set(part) <= set(whole), kind
    for name in ("slurm_queue_pending", "slurm_nodes_idle", "slurm_cpus_total", "slurm_gpus_total",
                 "slurm_scheduler_last_cycle", "slurm_scheduler_backfill_depth_mean", "slurm_rpc_stats",
                 "slurm_user_rpc_stats", "slurm_account_jobs_pending", "slurm_partition_cpus_idle"):
        assert name in whole, name
    assert value(whole, "slurm_cpus_total") == 4  # 2 nodes x 2 CPUs
    assert value(whole, "slurm_node_mem_total", node="n1") == 2000
    assert value(whole, "plurm_node_free_mem", node="n1") > 0  # plurmd's report
    assert value(whole, "slurm_gpus_total") == 0 and value(whole, "slurm_gpus_utilization") == 0


def test_counts_move_with_jobs_and_rpcs(rest: Rest) -> None:
    before = scrape(rest)
    submitted_before = value(before, "slurm_rpc_stats", operation="REQUEST_SUBMIT_BATCH_JOB") \
        if any(s.labels.get("operation") == "REQUEST_SUBMIT_BATCH_JOB" for s in before["slurm_rpc_stats"]) else 0
    held = rest.cluster.sbatch("--hold", "--wrap", "true", cwd=rest.work)
    running = rest.cluster.sbatch("-c", "2", "--wrap", "sleep 60", cwd=rest.work)
    try:
        rest.cluster.wait_state(running, "RUNNING")
        after = scrape(rest)
        assert value(after, "slurm_rpc_stats", operation="REQUEST_SUBMIT_BATCH_JOB") == submitted_before + 2
        assert value(after, "slurm_user_rpc_stats", user=ME) > 0
        assert value(after, "slurm_user_rpc_stats_total_time", user=ME) > 0
        assert value(after, "slurm_queue_pending") >= 1
        assert value(after, "slurm_queue_running") >= 1
        assert value(after, "plurm_jobs", state="pending", partition="debug") >= 1
        assert value(after, "slurm_user_jobs_pending", user=ME) >= 1
        assert value(after, "slurm_user_cpus_running", user=ME) >= 2
        assert value(after, "slurm_cpus_alloc") >= 2
        assert value(after, "slurm_partition_jobs_pending", partition="debug") >= 1
        assert value(after, "plurm_scheduler_cycles") + value(after, "plurm_scheduler_backfill_cycles") >= 1
        assert value(after, "plurm_scheduler_max_cycle") + value(after, "plurm_scheduler_backfill_max_cycle") > 0
    finally:
        rest.cluster.run("scancel", str(held), str(running))
    rest.cluster.wait_state(running, "CANCELLED")


def test_diag_answers_rpc_and_cycle_statistics(rest: Rest) -> None:
    token = rest.token()
    for version in VERSIONS:
        status, body = call(rest.url, "GET", f"/slurm/{version}/diag/", token, bearer=True)
        assert status == 200, body
        validate(body, version, "GET", "diag/")
    stats = body["statistics"]
    assert any(r["message_type"] == "REQUEST_JOB_INFO" and r["count"] >= 1 for r in stats["rpcs_by_message_type"]), stats
    assert any(r["user"] == ME and r["count"] >= 1 for r in stats["rpcs_by_user"]), stats
    assert stats["schedule_cycle_total"] + stats["bf_cycle_counter"] >= 1  # (bf_interval=1: either kind)


def _stats_as(rest: Rest, user: str, body: dict) -> dict:
    """A ``stats`` request to the real controller as ``user`` (a token root issued for it)."""
    from plurm.wire.client import Connection, read_settings
    from plurm.wire.jwt_cred import TokenCredential

    token = rest.token(f"username={user}")
    conn = Connection(read_settings(str(rest.cluster.conf)), timeout=10)
    try:
        conn.auth = TokenCredential(conn.auth, token, user)
        return conn.request("stats", body)
    finally:
        conn.close()


def test_only_operators_reset_the_counters(rest: Rest) -> None:
    from plurm.wire.client import ClientError

    try:
        _stats_as(rest, "nobody", {"reset": True})
    except ClientError as exc:
        assert exc.code == "AccessDenied", exc
    else:
        raise AssertionError("nobody reset the statistics")
    assert "statistics reset refused to nobody" in rest.log("plurmctld")
    counters = _stats_as(rest, "nobody", {"counters_only": True})  # reading is anyone's, as sdiag
    assert counters["rpc"] and "jobs" not in counters
    assert _stats_as(rest, ME, {"reset": True})["reset"] is True


def test_probes_answer_without_a_token(rest: Rest) -> None:
    for path in ("/livez", "/readyz", "/healthz"):
        status, _, text = get(rest, path)
        assert (status, text.strip()) == (200, "ok"), (path, status, text)


def test_readyz_is_503_while_the_controller_is_down(rest: Rest) -> None:
    """Last in the module: it stops the controller (the fixture's teardown stops the rest)."""
    from plurm.tools.localcluster import CTLD_MODULE, LocalCluster

    local = LocalCluster(str(rest.cluster.dir))
    pid = local._alive("plurmctld", CTLD_MODULE)
    assert pid is not None
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not os.path.exists(f"/proc/{pid}") or _zombie(pid), 30, "plurmctld stopped")
    status, _, text = get(rest, "/readyz")
    assert status == 503 and "controller unreachable" in text, (status, text)
    assert get(rest, "/livez")[0] == 200 and get(rest, "/healthz")[0] == 200
    status, _, text = get(rest, "/metrics")
    assert status == 503, (status, text)


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True



