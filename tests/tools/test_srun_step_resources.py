"""The step bookkeeping behind srun --exact/--whole/--resv-ports (corescheduler/step_resources.py)
and srun's own checks of its step options (tools/srun_step.py), without daemons."""

from __future__ import annotations

import pytest

from plurm.corescheduler import step_resources as sr
from plurm.tools import srun_step


def test_port_pool_and_ranges() -> None:
    assert sr.port_pool("ports=12000-12999") == (12000, 12999)
    assert sr.port_pool("other=1,ports=5-9") == (5, 9)
    for bad in ("", "ports=9-5", "ports=x-9", "ports=0-3", "ports=1-70000", "none"):
        assert sr.port_pool(bad) is None
    assert sr.port_ranges([12003, 12000, 12002]) == "12000,12002-12003"  # (22.05.8's SLURM_STEP_RESV_PORTS)
    assert sr.port_ranges([7]) == "7"


def test_ports_are_dealt_cyclically_and_never_shared() -> None:
    claims = sr.StepClaims()
    pool = (10, 14)
    a = claims.reserve_ports(pool, 2)
    claims.add((1, "0"), sr.Claim(["n1"], [1], a))
    b = claims.reserve_ports(pool, 2)
    claims.add((1, "1"), sr.Claim(["n1"], [1], b))
    assert (a, b) == ([10, 11], [12, 13])
    with pytest.raises(sr.StepBusy, match="Required ports are in use"):
        claims.reserve_ports(pool, 2)  # only 14 is free
    with pytest.raises(ValueError, match="more ports than can be reserved"):
        claims.reserve_ports(pool, 6)
    claims.forget_gone({(1, "1")})  # step 0 ended: its ports come back, after 14 (cyclic)
    assert claims.reserve_ports(pool, 3) == [14, 10, 11]


def test_placement_by_mode() -> None:
    names, cpus = ["n1", "n2"], [2, 2]
    # default: the first nodes whatever runs there; exact: the nodes with free CPUs first
    assert sr.place(names, cpus, {"n1": 2}, 1, 1, 1, "default", False) == (["n1"], [2], "node")
    assert sr.place(names, cpus, {"n1": 2}, 1, 1, 1, "exact", False) == (["n2"], [2], "tasks")
    assert sr.place(names, cpus, {"n1": 1}, 2, 3, 1, "exact", False) == (["n1", "n2"], [1, 2], "tasks")
    with pytest.raises(sr.StepBusy, match="Requested nodes are busy"):
        sr.place(names, cpus, {"n1": 2, "n2": 1}, 1, 2, 1, "exact", False)
    # never fits the job: not busy, refused by the caller (the capacity says so)
    assert sum(sr.place(names, cpus, {}, 1, 5, 1, "exact", False)[1]) < 5
    # whole: only nodes nothing holds
    assert sr.place(names, cpus, {"n1": 1}, 1, 1, 1, "whole", False) == (["n2"], [2], "node")
    with pytest.raises(sr.StepBusy):
        sr.place(names, cpus, {"n1": 1}, 2, 2, 1, "whole", False)


def test_srun_step_option_checks() -> None:
    with pytest.raises(srun_step.StepOptionError, match="--exact and --whole are mutually exclusive"):
        srun_step.check_options({"exact": True, "whole": True})
    with pytest.raises(srun_step.StepOptionError, match=r"-r,--relative not allowed with -w"):
        srun_step.check_options({"relative": 1, "nodelist": ["n1"]})
    assert srun_step.check_options({"threads": 61}) == \
        ["srun: error: Thread value --threads=61 exceeds recommended limit of 60"]
    job = {"nodes": ["a", "b", "c"]}
    srun_step.check_relative({"relative": 1, "nodes": (1, 1)}, {"nodes"}, {}, False, job)
    with pytest.raises(srun_step.StepOptionError, match=r"SLURM_JOB_NUM_NODES option .* \(2\+3>3\)"):
        srun_step.check_relative({"relative": 2}, set(), {"SLURM_JOB_NUM_NODES": "3"}, False, job)
    with pytest.raises(srun_step.StepOptionError, match="invalid for job allocation request"):
        srun_step.check_relative({"relative": 0}, set(), {}, True, None)
    assert (srun_step.resv_ports({}), srun_step.resv_ports({"resv-ports": True}),
            srun_step.resv_ports({"resv-ports": "3"})) == (None, 0, 3)
    assert (srun_step.fanout({}, 100), srun_step.fanout({"threads": 2}, 5), srun_step.fanout({}, 3)) == (60, 2, 3)
