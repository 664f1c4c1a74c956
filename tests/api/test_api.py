"""plurm.api against a real cluster: submit, get, list, cancel; idempotent retries (across a
kill -9 of the controller too); keys per user; bulk submission durable in one commit; hostile
input refused with typed errors (issue 16 item 5, issue 17 item 5)."""

from __future__ import annotations

import os
import signal

import pytest

from plurm import api
from plurm.api.jobs import BATCH_LIMIT
from plurm.corescheduler.idempotency import MAX_BATCH, MAX_KEY_LEN
from plurmtest import Cluster, wait_for

SCRIPT = "#!/bin/sh\n#SBATCH -J apitest\n#SBATCH -n 1\necho api-ran\n"


def _restart_controller(c: Cluster) -> None:
    """kill -9, then ``plurm cluster up`` starts it again from the store alone."""
    pid = int((c.dir / "run" / "plurmctld.pid").read_text())
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not os.path.exists(f"/proc/{pid}") or " Z " in open(f"/proc/{pid}/stat").read(),
             what="the controller to die")
    c.up()


def test_submit_get_list_cancel(cluster: Cluster, tmp_path) -> None:
    conf = str(cluster.conf)
    env = dict(os.environ, SLURM_CONF=conf)
    with api.Client(conf) as client:
        done = client.submit(SCRIPT, ["-o", str(tmp_path / "out-%j")], environ=env)
        assert done.job_id is not None and not done.duplicate and done.error is None
        assert cluster.wait_state(done.job_id, "COMPLETED")["spec"]["name"] == "apitest"  # the #SBATCH line
        assert (tmp_path / f"out-{done.job_id}").read_text() == "api-ran\n"
        held = client.submit(wrap="true", args=["--hold", "-J", "apiheld"], environ=env)
        record = client.get(held.job_id)
        assert record["job_id"] == held.job_id and record["reason"] == "JobHeldUser"
        listed = [j["job_id"] for j in client.list_jobs(names=["apiheld"])]
        assert listed == [held.job_id]
        assert held.job_id in [j["job_id"] for j in api.list(conf=conf, states=["PENDING"])]
        client.cancel(held.job_id)
        assert cluster.wait_state(held.job_id, "CANCELLED")["state"] == "CANCELLED"
        assert done.job_id not in [j["job_id"] for j in client.list_jobs()]  # finished: not active
        assert done.job_id in [j["job_id"] for j in client.list_jobs(all_states=True)]
        with pytest.raises(api.ClientError) as refused:
            client.get(99_999_999)
        assert refused.value.code == "InvalidJobId"
        with pytest.raises(api.ClientError) as refused:
            client.cancel(99_999_999)
        assert str(refused.value) == "Invalid job id specified"
    # Options mean what sbatch says they mean, refusals included.
    with pytest.raises(api.ClientError) as bad:
        api.submit(SCRIPT, ["--bogus"], conf=conf)
    assert bad.value.code == "InvalidOption" and "unrecognized option '--bogus'" in str(bad.value)
    with pytest.raises(api.ClientError) as bad:
        api.submit(SCRIPT, ["-p", "nosuchpart"], conf=conf, environ=env)
    assert "Invalid partition name specified" in str(bad.value)


def test_retry_with_a_key_returns_the_same_job_even_after_a_controller_kill9(fresh_cluster: Cluster) -> None:
    c = fresh_cluster
    conf = str(c.conf)
    first = api.submit(SCRIPT, ["--hold"], key="retry-1", conf=conf)
    again = api.submit(SCRIPT, ["--hold"], key="retry-1", conf=conf)
    assert (again.job_id, again.duplicate, first.duplicate) == (first.job_id, True, False)
    other = api.submit(SCRIPT, ["--hold"], key="retry-2", conf=conf)
    assert other.job_id == first.job_id + 1 and not other.duplicate
    _restart_controller(c)
    after = api.submit(SCRIPT, ["--hold"], key="retry-1", conf=conf)
    assert (after.job_id, after.duplicate) == (first.job_id, True)
    named = [j["job_id"] for j in api.list(conf=conf, names=["apitest"])]
    assert sorted(named) == [first.job_id, other.job_id]  # never a second job for one key
    # Without a key a resubmission is a new job, as with sbatch.
    assert api.submit(SCRIPT, ["--hold"], conf=conf).job_id == other.job_id + 1


def test_keys_are_per_user(fresh_cluster: Cluster, test_users) -> None:
    """The same key from two users makes two jobs; the owner is the verified one (root may
    submit as another user with --uid, as in Slurm; a user naming another uid is refused)."""
    conf = str(fresh_cluster.conf)
    a = test_users["plurmta"]
    mine = api.submit(SCRIPT, ["--hold"], key="shared-key", conf=conf)
    theirs = api.submit(SCRIPT, ["--hold", f"--uid={a.name}"], key="shared-key", conf=conf)
    assert theirs.job_id != mine.job_id and not theirs.duplicate
    assert api.get(theirs.job_id, conf=conf)["spec"]["user_id"] == a.uid
    again = api.submit(SCRIPT, ["--hold", f"--uid={a.name}"], key="shared-key", conf=conf)
    assert (again.job_id, again.duplicate) == (theirs.job_id, True)
    mine_again = api.submit(SCRIPT, ["--hold"], key="shared-key", conf=conf)
    assert (mine_again.job_id, mine_again.duplicate) == (mine.job_id, True)


def test_bulk_of_2000_all_durable_after_kill9(fresh_cluster: Cluster) -> None:
    c = fresh_cluster
    conf = str(c.conf)
    bodies = [api.prepare(wrap="true", args=["--hold", "-J", f"bulk{i}"], key=f"bulk-{i}") for i in range(2000)]
    with api.Client(conf, timeout=60) as client:
        results = client.submit_many(bodies)
    assert [r.error for r in results] == [None] * 2000
    ids = [r.job_id for r in results]
    assert ids == list(range(ids[0], ids[0] + 2000))  # in order, one id each
    _restart_controller(c)  # the reply came after the commit: nothing may be missing now
    jobs = {j["job_id"]: j for j in api.list(conf=conf)}
    assert set(ids) <= set(jobs) and all(jobs[i]["spec"]["name"] == f"bulk{n}" for n, i in enumerate(ids))
    # The whole batch sent again (a retry after a timeout): the same jobs, none new.
    with api.Client(conf, timeout=60) as client:
        again = client.submit_many(bodies[:500])
    assert [r.job_id for r in again] == ids[:500] and all(r.duplicate for r in again)
    assert len(api.list(conf=conf)) == 2000


def test_hostile_input_gets_typed_errors(cluster: Cluster) -> None:
    conf = str(cluster.conf)
    with api.Client(conf, timeout=60) as client:
        for key in ("", "has space", "x" * (MAX_KEY_LEN + 1), "new\nline", "ключ"):
            with pytest.raises(api.ClientError) as bad:
                client.request("submit_job", dict(api.prepare(wrap="true", args=["--hold"]), key=key))
            assert bad.value.code == "InvalidIdempotencyKey", key
        assert client.submit(wrap="true", args=["--hold"], key="x" * MAX_KEY_LEN).job_id  # the longest is fine
        with pytest.raises(api.ClientError) as bad:
            client.request("submit_jobs", {"jobs": []})
        assert bad.value.code == "InvalidBatch"
        tiny = {"spec": {"name": "t", "hold": True, "script": "#!/bin/sh\ntrue\n"}}
        with pytest.raises(api.ClientError) as bad:
            client.request("submit_jobs", {"jobs": [tiny] * (MAX_BATCH + 1)})
        assert bad.value.code == "BatchTooLarge" and str(MAX_BATCH) in str(bad.value)
        assert not client.list_jobs(names=["t"])  # refused whole: nothing of it was taken
        with pytest.raises(api.ClientError) as bad:
            client.request("submit_jobs", {"jobs": "many"})
        assert bad.value.code == "MalformedMessage"
        # One bad entry is refused with Slurm's message; the others stand.
        good = api.prepare(wrap="true", args=["--hold", "-J", "mixed"])
        wrong = api.prepare(wrap="true", args=["--hold", "-J", "mixed", "-p", "nosuchpart"])
        results = client.submit_many([good, wrong, good])
        assert [r.error is None for r in results] == [True, False, True]
        assert results[1].error.code == "InvalidPartition" or "Invalid partition" in str(results[1].error)
        assert sorted(j["job_id"] for j in client.list_jobs(names=["mixed"])) == [results[0].job_id,
                                                                               results[2].job_id]
        # submit_many splits what is larger than one message may carry.
        assert BATCH_LIMIT == MAX_BATCH
        for job in client.list_jobs(names=["mixed", "wrap"]):
            client.cancel(job["job_id"])


def test_submit_many_splits_what_one_message_cannot_carry(cluster: Cluster) -> None:
    """1,500 jobs of 10 KB environment each (15 MB): more than one message may carry
    (16 MiB per frame), so two messages, two commits; every job accepted, in order."""
    conf = str(cluster.conf)
    environ = {"PATH": os.environ["PATH"], "BIG": "x" * 10_000}
    bodies = [api.prepare(wrap="true", args=["--hold", "-J", "bigenv"], environ=environ) for _ in range(1500)]
    with api.Client(conf, timeout=60) as client:
        results = client.submit_many(bodies)
        assert [r.error for r in results] == [None] * 1500
        ids = [r.job_id for r in results]
        assert ids == sorted(ids) and len(set(ids)) == 1500
        assert len(client.list_jobs(names=["bigenv"])) == 1500
        client.request("cancel_job", {"names": ["bigenv"]})


def test_watch_follows_a_job_submitted_through_the_api(cluster: Cluster, tmp_path) -> None:
    """submit -> watch (plurm/api/events.py, re-exported by plurm.api): the job's own events,
    from its submission to its completion."""
    conf = str(cluster.conf)
    job = api.submit(wrap="true", args=["-o", str(tmp_path / "w-%j")], key="watch-me", conf=conf)
    seen: list[str] = []
    for event in api.watch(job=job.job_id, conf=conf):
        if event.get("marker"):
            continue
        assert event["job_id"] == job.job_id
        seen.append(event["event"])
        if event["event"] in ("complete", "cancel"):  # (its last event, either way)
            break
    assert seen[0] == "submit" and "start" in seen and seen[-1] == "complete"
