"""The options of issue 14 item 8 without a cluster: their values (22.05's refusals), the
JobSpec fields and job variables they give, ``scontrol show job``'s lines for them against the
anchor's own (tests/tools/reference/options_rest/show_job_*.txt), and the controller's
refusal of ``--batch`` (sans-IO core).  The real-daemon side: test_options_rest.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from plurm.corescheduler.core import ClusterCore, CoreSettings
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.service import Service
from plurm.grammar.values import OptionValueError, parse_cpu_freq, parse_gpu_freq, parse_switches
from plurm.tools import options_rest as rest
from plurm.tools.jobspec import build_spec, not_acted_on
from plurm.tools.sbatch_cli import parse_sbatch
from plurm.wire import protocol
from plurm.wire.model import JobSpec, Node, Partition

REF = Path(__file__).parent / "reference" / "options_rest"
ALICE = Identity(1001, 1001, "alice", frozenset({"alice"}))
T0 = 1_000_000.0
ALL = ["--reboot", "--bb=capacity=1G", "--container=/tmp/b", "--cluster-constraint=fast", "--network=sn_all",
       "--power=level", "--switches=2@1:00", "--cpu-freq=low", "--gpu-freq=high", "--context=x"]


def _spec(argv: list[str], environ: dict[str, str] | None = None) -> dict:
    req = parse_sbatch([*argv, "--wrap", "true"], dict(environ or {}))
    return build_spec(req.options, default_name="wrap", environ={}, batch=True, script=req.script_text,
                      raw_options=req.raw_options)


@pytest.mark.parametrize(("value", "lines"), [
    ("fastest", ['unrecognized --cpu-freq argument "fastest"', "Invalid --cpu-freq argument"]),
    ("high-low", ["min cpu-frec (high) must be < max cpu-freq (low)", "Invalid --cpu-freq argument"]),
    ("2000000-1000000", ["min cpu-frec (2000000) must be < max cpu-freq (1000000)", "Invalid --cpu-freq argument"]),
])
def test_cpu_freq_refusals(value: str, lines: list[str]) -> None:
    with pytest.raises(OptionValueError) as err:
        parse_cpu_freq(value)
    assert err.value.pre_errors == lines[:1] and str(err.value).endswith(lines[1]) and err.value.exit_code == 255


def test_gpu_freq_and_switches_values() -> None:
    for good in ("high", "medium,memory=low", "memory=high,verbose", "1200", "verbose"):
        assert parse_gpu_freq(good) == good
    for bad in ("fastest", "memory=fast", "gpu=high", ""):
        with pytest.raises(OptionValueError) as err:
            parse_gpu_freq(bad)
        assert str(err.value.args[0]) == f"Invalid --gpu-freq argument: gpu:{bad}"
    assert parse_switches("1@bad") == {"count": 1, "max_wait_minutes": None}  # 22.05: 1@00:05:00
    assert parse_switches("2@1:00") == {"count": 2, "max_wait_minutes": 1}
    for bad, line in (("-1", 'Invalid numeric value "-1" for --switches.'), ("abc", 'Invalid numeric value "abc" '
                      "for --switches."), ("99999999999999999999", "Numeric argument (9223372036854775807) to big "
                                                                   "for --switches.")):
        with pytest.raises(OptionValueError) as err:
            parse_switches(bad)
        assert str(err.value) == line and err.value.exit_code == 1  # (observed on the anchor)
    assert "switches" not in _spec(["--switches=4294967295"])  # accepted, not shown (22.05: "not set")


def test_the_options_become_fields_and_variables_not_warnings() -> None:
    spec = _spec(ALL)
    assert not_acted_on(spec) == []
    assert {k: spec[k] for k in ("reboot", "exclusive", "burst_buffer", "container", "cluster_features", "network",
                                 "power", "switches", "switch_wait_s", "cpu_freq", "gpu_freq", "selinux_context")} == {
        "reboot": True, "exclusive": True, "burst_buffer": "capacity=1G", "container": "/tmp/b",
        "cluster_features": "fast", "network": "sn_all", "power": "LEVEL", "switches": 2, "switch_wait_s": 60,
        "cpu_freq": "low", "gpu_freq": "high", "selinux_context": "x"}
    env = spec["environment"]
    assert (env["SLURM_CPU_FREQ_REQ"], env["SLURM_GPU_FREQ"], env["SLURM_CONTAINER"]) == ("Low", "high", "/tmp/b")
    assert rest.job_variables("srun", {"cpu-freq": "1000000-2000000:performance", "gpu-freq": "high",
                                       "network": "x"}) == {"SLURM_CPU_FREQ_REQ": "1000000-2000000:Performance"}
    assert rest.job_variables("salloc", {"network": "sn_all"}) == {"SLURM_NETWORK": "sn_all"}
    assert _spec(["--wait", "--bbf=f", "--batch=x"])["batch_features"] == "x"


def test_clusters_known_and_unknown(capsys: pytest.CaptureFixture[str]) -> None:
    assert rest.check_clusters("sbatch", {}, "anchor") is None
    assert rest.check_clusters("sbatch", {"clusters": "anchor"}, "anchor") == "anchor"
    assert rest.check_clusters("srun", {"clusters": "anchor,other"}, "anchor") == "anchor"
    assert capsys.readouterr().err == "srun: error: No cluster 'other' known by database.\n"
    with pytest.raises(rest.RefusedOption) as err:  # (observed: sbatch -M ,)
        rest.check_clusters("sbatch", {"clusters": ","}, "anchor")
    assert err.value.lines[0] == "sbatch: error: No cluster '' known by database."
    with pytest.raises(rest.RefusedOption) as err:
        rest.check_clusters("salloc", {"clusters": "x,y"}, "anchor")
    assert err.value.exit_code == 1 and err.value.lines == [
        "salloc: error: No cluster 'x' known by database.", "salloc: error: No cluster 'y' known by database.",
        "salloc: error: 'x,y' can't be reached now, or it is an invalid entry for --cluster.  "
        "Use 'sacctmgr list clusters' to see available clusters."]


def test_x11_is_refused_in_22_05s_order(tmp_path: Path) -> None:
    for env, line in (({}, "No DISPLAY variable set, cannot setup x11 forwarding."),
                      ({"DISPLAY": ":93"}, "Cannot stat() local X11 socket `/tmp/.X11-unix/X93`")):
        with pytest.raises(rest.RefusedOption) as err:
            rest.check_x11("srun", {"x11": "all"}, env)
        assert err.value.lines == [f"srun: error: {line}"] and err.value.exit_code == 255
    with pytest.raises(rest.RefusedOption) as err:  # a remote display, no cookie for it
        rest.check_x11("salloc", {"x11": True}, {"DISPLAY": "nosuchhost.invalid:7"})
    assert "Could not retrieve magic cookie" in err.value.lines[0] or "does not forward X11" in err.value.lines[0]
    rest.check_x11("srun", {}, {})  # not asked: nothing


def test_salloc_container_needs_the_interactive_step() -> None:
    with pytest.raises(rest.RefusedOption) as err:
        rest.check_salloc_container({"container": "/b"}, "enable_nss_slurm")
    assert err.value.lines == ["salloc: error: --container requires LaunchParameters=use_interactive_step"]
    rest.check_salloc_container({"container": "/b"}, "use_interactive_step")
    rest.check_salloc_container({}, "")


def _show(spec: dict) -> list[str]:
    from plurm.tools.showfmt import job_lines

    job = {"job_id": 195, "spec": spec, "state": "PENDING", "reason": "JobHeldUser", "partition": "debug",
           "submit_time": T0, "held_by": "user"}
    return job_lines(job, T0, def_mem_per_cpu=256)


def test_show_job_lines_as_the_anchor_prints_them() -> None:
    """The anchor's `scontrol show job` of a held job with all of them (show_job_all.txt) and
    of a --cpu-freq range (show_job_cpufreq.txt): their lines, in their order."""
    for argv, name in ((ALL, "show_job_all.txt"), (["--cpu-freq=1000000-2000000:performance"], "show_job_cpufreq.txt")):
        spec = _spec(["-H", "-o", "/dev/null", *argv])
        want = (REF / name).read_text().splitlines()
        got = _show(spec)
        keys = ("Reboot=", "ClusterFeatures=", "Network=", "Switches=", "BurstBuffer=", "CPU_", "Power=",
                "TresFreq=", "Container=")
        pick = [line.strip() for line in want if any(k in line for k in keys)]
        mine = [line.strip() for line in got if any(k in line for k in keys)]
        assert mine == pick, "\n".join(got)
        assert got.index(next(x for x in got if x.strip().startswith("StdOut="))) < \
            got.index(next(x for x in got if "Power=" in x))
    assert rest.cpu_freq_show("performance") == "Governor=Performance"


def test_the_controller_refuses_batch_features() -> None:
    names = {f"n{i}": Node(name=f"n{i}", cpus=4, real_memory=4000, responding=True, boot_time=1.0) for i in (1, 2)}
    core = ClusterCore(names, {"debug": Partition(name="debug", nodes=list(names), default=True)},
                       CoreSettings(cluster_name="t"), now=T0)
    service = Service(core)
    with pytest.raises(RequestError) as err:
        service.submit(protocol.SubmitJob(spec=JobSpec(script="#!/bin/sh\n", batch_features="fast",
                                                       constraint="fast")), ALICE, T0)
    assert str(err.value) == "Job --batch option is invalid or not a subset of --constraints"
    assert not core.jobs
    operator = Identity(0, 0, "root", operator=True)  # (--reboot is the operators': core_reboot.py)
    job = service.submit(protocol.SubmitJob(spec=JobSpec(script="#!/bin/sh\n", reboot=True, power="LEVEL",
                                                         switches=1, switch_wait_s=300)), operator, T0)
    assert core.jobs[job["job_id"]].spec.reboot  # kept (shown Reboot=1)


def test_env_is_untouched_without_the_options() -> None:
    spec = _spec([])
    assert not {k for k in spec["environment"] if k in ("SLURM_CPU_FREQ_REQ", "SLURM_GPU_FREQ", "SLURM_CONTAINER")}


def test_salloc_bell_only_on_a_terminal() -> None:
    class Out:
        def __init__(self, tty: bool) -> None:
            self.tty, self.text = tty, ""

        def isatty(self) -> bool:
            return self.tty

        def write(self, text: str) -> None:
            self.text += text

        def flush(self) -> None:
            pass

    for options, waited, tty, rung in (({"bell": True}, 0.1, True, True), ({}, 0.1, True, False),
                                       ({}, 11.0, True, True), ({"no-bell": True}, 11.0, True, False),
                                       ({"bell": True}, 11.0, False, False)):
        out = Out(tty)
        rest.ring_bell(options, waited, out)
        assert (out.text == "\a") is rung, (options, waited, tty)
