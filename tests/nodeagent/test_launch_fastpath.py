"""The launch path's shortcuts (issue 17) change nothing a job can see: limits the child
inherits already and an owner switch to plurmd's own ids are left out (so that Popen may
vfork), the spool records are written as before, and the wire's C encoder writes what the
pure-Python one writes."""

from __future__ import annotations

import json
import os
import resource
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st
from plurm.common import rlimits
from plurm.nodeagent import jobstate, launch
from plurm.wire import lightjson


def test_limits_already_inherited_need_no_preexec() -> None:
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert "preexec_fn" not in rlimits.preexec({"umask": 0o22}, [(resource.RLIMIT_NOFILE, soft)])


def test_a_limit_that_differs_is_still_set_in_the_child() -> None:
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lower = max(64, soft // 2)
    assert lower != soft
    kwargs = rlimits.preexec({}, [(resource.RLIMIT_NOFILE, lower)])
    assert "preexec_fn" in kwargs
    out = subprocess.run(["/bin/sh", "-c", "ulimit -n"], capture_output=True, text=True, check=True, **kwargs)
    assert int(out.stdout) == lower


def test_owner_who_is_plurmd_itself_is_not_switched() -> None:
    me = launch.owner_of(os.getuid(), os.getgid(), {})
    kwargs = me.popen_kwargs(None)
    assert "user" not in kwargs and "preexec_fn" not in kwargs
    out = subprocess.run(["id", "-u"], capture_output=True, text=True, check=True, **kwargs)
    assert int(out.stdout) == os.getuid()


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to another user needs root")
def test_another_owner_is_still_switched() -> None:
    import pwd

    nobody = pwd.getpwnam("nobody")
    owner = launch.owner_of(nobody.pw_uid, nobody.pw_gid, {})
    kwargs = owner.popen_kwargs(None)
    assert kwargs["user"] == nobody.pw_uid and kwargs["group"] == nobody.pw_gid
    out = subprocess.run(["id", "-u"], capture_output=True, text=True, check=True, cwd="/", **kwargs)
    assert int(out.stdout) == nobody.pw_uid


def test_run_record_round_trips_and_run_dir_makes_its_parents(tmp_path) -> None:
    spool = str(tmp_path / "spool")
    path = jobstate.run_dir(spool, 7, 1)  # the runs folder does not exist yet
    assert os.path.isdir(path) and jobstate.run_dir(spool, 7, 1) == path  # (a second call: no error)
    end = {"exit_code": 0, "usage": {"user_cpu_s": 0.5}, "tres_usage_max": [["cpu", 1]]}
    record = jobstate.RunRecord(7, 1, 12.5, gpus=[0], end=end, cpus=[2, 3], err_path="/x")
    record.save(path)
    again = jobstate.RunRecord.load(path)
    assert again == record
    with open(os.path.join(path, "job.json")) as handle:
        assert json.load(handle)["end"] == end
    blocker = jobstate.run_dir(spool, 8, 0, create=False)
    with open(blocker, "w"):
        pass
    with pytest.raises(FileExistsError):
        jobstate.run_dir(spool, 8, 0)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=30,
)


@given(json_values)
def test_c_encoder_writes_what_the_python_one_writes(value) -> None:
    out: list[str] = []
    lightjson._encode(value, out)
    assert lightjson.dumps(value) == "".join(out)
