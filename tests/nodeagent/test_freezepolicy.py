"""The freeze policy: the built-in memory and device checks on synthetic sample streams,
plurm.conf's settings and their errors, and a third-party policy through the plugin manager
(registered directly, and installed as an entry point)."""

from __future__ import annotations

import logging
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from plurm.grammar.plurmconf import read_plurm_conf
from plurm.nodeagent.freezepolicy import (
    WINDOW_SAMPLES,
    ConfError,
    FreezeSettings,
    MemoryPolicy,
    Policies,
    Sample,
    Verdict,
    size_text,
)
from plurm.plugins.hookspecs import hookimpl
from plurm.plugins.manager import DuplicatePluginError, PluginManager, reset_plugin_manager
from plurm.plugins.types import FreezePolicyPlugin

M = 1 << 20
LIMIT = 100 * M


@pytest.fixture(autouse=True)
def _fresh_plugin_manager(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for var in ("PLURM_DISABLE_PLUGIN_AUTOLOAD", "PLURM_BLOCKED_PLUGINS", "PLURM_TRACE_PLUGINS"):
        monkeypatch.delenv(var, raising=False)
    reset_plugin_manager()
    yield
    reset_plugin_manager()


def conf_dir(tmp_path: Path, plurm_conf: str | None) -> str:
    """A slurm.conf path whose directory holds ``plurm_conf`` (None: no plurm.conf)."""
    (tmp_path / "slurm.conf").write_text("ClusterName=test\n")
    if plurm_conf is not None:
        (tmp_path / "plurm.conf").write_text(textwrap.dedent(plurm_conf))
    return str(tmp_path / "slurm.conf")


def load(tmp_path: Path, plurm_conf: str | None, pm: PluginManager | None = None) -> Policies:
    return Policies.load(conf_dir(tmp_path, plurm_conf), manager=pm or PluginManager(autoload=False))


def sample(at: float, rss: int, job: int = 7, limit: int | None = LIMIT, **kw: list[str]) -> Sample:
    return Sample(job_id=job, uid=1000, at=at, rss_bytes=rss, mem_limit_bytes=limit, **kw)


def feed(policies: Policies, stream: list[Sample]) -> list[tuple[float, Verdict]]:
    return [(s.at, v) for s in stream if (v := policies.observe(s)) is not None]


# ---------------------------------------------------------------- near the memory limit

MEMORY = "FreezePolicy=memory\nFreezeMemoryFraction=0.9\nFreezeMemoryFor=30\n"


def test_growth_that_stays_under_the_fraction_is_no_anomaly(tmp_path):
    policies = load(tmp_path, MEMORY)
    stream = [sample(t, 10 * M + t * M // 10) for t in range(0, 790, 10)]  # up to 88.9M of 100M
    assert stream[-1].rss_bytes < 0.9 * LIMIT
    assert feed(policies, stream) == []


def test_above_the_fraction_for_the_duration_freezes_with_a_readable_cause(tmp_path):
    policies = load(tmp_path, MEMORY)
    stream = [sample(t, 50 * M if t < 100 else 95 * M) for t in range(0, 200, 10)]
    verdicts = feed(policies, stream)
    at, verdict = verdicts[0]
    assert at == 130  # above since 100, for 30 s
    assert verdict == Verdict(7, "freeze", "memory 95% of 100M for 30s", "memory")
    assert len(verdicts) == 1, "one verdict: the job is frozen until forget"


def test_a_dip_resets_the_timer(tmp_path):
    policies = load(tmp_path, MEMORY)
    rss = {0: 95, 10: 95, 20: 95, 25: 80, 30: 95, 40: 95, 50: 95, 60: 95}
    verdicts = feed(policies, [sample(t, r * M) for t, r in rss.items()])
    assert [at for at, _ in verdicts] == [60]  # the clock started again at 30


def test_a_job_without_a_memory_limit_is_never_near_it(tmp_path):
    policies = load(tmp_path, MEMORY)
    assert feed(policies, [sample(t, 10 << 30, limit=None) for t in range(0, 600, 10)]) == []


def test_a_fraction_as_a_percentage_and_seconds_with_a_unit(tmp_path):
    policies = load(tmp_path, "FreezePolicy=memory FreezeMemoryFraction=50% FreezeMemoryFor=0s\n")
    assert feed(policies, [sample(0, 49 * M), sample(1, 60 * M)])[0][1].cause == "memory 60% of 100M for 0s"


# ---------------------------------------------------------------- memory that keeps growing

GROWTH = "FreezePolicy=memory\nFreezeMemoryGrowth=1M\nFreezeMemoryGrowthWindow=60\n"


def test_a_sustained_leak_freezes_after_one_window(tmp_path):
    policies = load(tmp_path, GROWTH)
    verdicts = feed(policies, [sample(t, 10 * M + 2 * M * t, limit=None) for t in range(0, 300, 5)])
    at, verdict = verdicts[0]
    assert at == 60
    assert verdict.cause == "memory grew 2M/s for 60s to 130M" and verdict.policy == "memory"


def test_a_leak_seen_at_the_default_sampling_interval_with_jitter(tmp_path):
    # JobAcctGatherFrequency=30 and the default 120 s window: five samples span it.
    policies = load(tmp_path, "FreezePolicy=memory\nFreezeMemoryGrowth=1M\n")
    jitter = [0.1, 0.4, 0.0, 0.3, 0.2]
    stream = [sample(30 * i + jitter[i % 5], 10 * M + 2 * M * 30 * i, limit=None) for i in range(12)]
    at, verdict = feed(policies, stream)[0]
    assert at == 120.2 and verdict.cause == "memory grew 2M/s for 120s to 250M"


def test_a_leak_slower_than_the_rate_is_no_anomaly(tmp_path):
    policies = load(tmp_path, GROWTH)
    assert feed(policies, [sample(t, 10 * M + M * t // 2, limit=None) for t in range(0, 600, 5)]) == []


def test_one_burst_is_not_sustained_growth(tmp_path):
    # 500M at once, then flat: fast over the whole window on average, but not in each part.
    policies = load(tmp_path, GROWTH)
    stream = [sample(t, 10 * M if t < 10 else 510 * M, limit=None) for t in range(0, 300, 5)]
    assert feed(policies, stream) == []


def test_a_fall_starts_a_new_growth_window(tmp_path):
    policies = load(tmp_path, GROWTH)
    stream = [sample(t, 10 * M + 2 * M * t - (50 * M if t >= 40 else 0), limit=None)
              for t in range(0, 300, 5)]
    assert [at for at, _ in feed(policies, stream)][:1] == [100]  # 40 + a 60 s window


def test_the_growth_window_is_bounded_however_often_it_samples():
    policy = MemoryPolicy(FreezeSettings(frozenset({"memory"}), memory_growth_bps=1e12,
                                         memory_growth_window_s=60))
    for i in range(20_000):
        assert policy.observe(sample(i / 100, 10 * M + i * 1024, limit=None)) is None
    assert len(policy._window[7]) <= WINDOW_SAMPLES


# ---------------------------------------------------------------- devices

DEVICE = "FreezePolicy=device\n"
GPUS = [f"/dev/nvidia{i}" for i in range(4)]


def test_a_device_outside_the_allocation_freezes(tmp_path):
    policies = load(tmp_path, DEVICE)
    ok = sample(0, M, allocated_devices=["/dev/nvidia0"], opened_devices=["/dev/nvidia0"])
    assert policies.observe(ok) is None
    bad = sample(10, M, allocated_devices=["/dev/nvidia0"], opened_devices=["/dev/nvidia0", "/dev/nvidia2"])
    assert policies.observe(bad) == Verdict(7, "freeze", "opened /dev/nvidia2, not allocated", "device")


def test_only_the_nodes_device_files_count_when_they_are_given(tmp_path):
    policies = load(tmp_path, DEVICE)
    shared = sample(0, M, allocated_devices=["/dev/nvidia0"], node_devices=GPUS,
                    opened_devices=["/dev/nvidia0", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/null"])
    assert policies.observe(shared) is None
    many = sample(1, M, allocated_devices=[], node_devices=GPUS, opened_devices=GPUS)
    assert policies.observe(many).cause == "opened /dev/nvidia0 /dev/nvidia1 and 2 more, not allocated"


def test_devices_are_not_checked_unless_named(tmp_path):
    policies = load(tmp_path, MEMORY)
    assert policies.observe(sample(0, M, allocated_devices=[], opened_devices=GPUS)) is None
    assert not policies.wants_open_devices and load(tmp_path, DEVICE).wants_open_devices


# ---------------------------------------------------------------- off, forget, resume

@pytest.mark.parametrize("plurm_conf", [None, "", "FreezePolicy=none\n", "# nothing\nFreezeMemoryFor=5\n"])
def test_the_policy_is_off_by_default(tmp_path, plurm_conf):
    policies = load(tmp_path, plurm_conf)
    assert not policies and policies.names == []
    stream = [sample(t, LIMIT, allocated_devices=[], opened_devices=GPUS) for t in range(0, 3600, 10)]
    assert feed(policies, stream) == []


def test_both_checks_and_their_defaults(tmp_path):
    policies = load(tmp_path, "FreezePolicy=memory,devices\n")
    assert policies.names == ["memory", "device"]
    assert FreezeSettings.from_conf(read_plurm_conf(tmp_path / "plurm.conf")) == FreezeSettings(
        frozenset({"memory", "device"}), 0.9, 30.0, None, 120.0)


def test_forget_keeps_nothing_for_the_job(tmp_path):
    policies = load(tmp_path, MEMORY + "FreezeMemoryGrowth=1M\n")
    memory = dict(policies.policies)["memory"]
    for job in range(100):
        feed(policies, [sample(t, 95 * M, job=job) for t in range(0, 60, 10)])
    assert len(policies.jobs()) == 100 and len(memory.jobs()) == 100
    for job in range(100):
        policies.forget(job)
    assert policies.jobs() == set() and memory.jobs() == set()


def test_a_resumed_job_is_excused_from_the_policy_that_froze_it(tmp_path):
    policies = load(tmp_path, MEMORY + "FreezePolicy=memory,device\n")
    assert feed(policies, [sample(t, 95 * M) for t in range(0, 40, 10)])[0][0] == 30
    policies.forget(7, resumed=True)  # scontrol resume: the administrator judged it sound
    assert feed(policies, [sample(t, 95 * M) for t in range(40, 200, 10)]) == []
    device = sample(200, 95 * M, allocated_devices=[], opened_devices=["/dev/nvidia1"])
    assert policies.observe(device).policy == "device"  # other checks still apply
    policies.forget(7)  # it ended: a new job with the same id starts with a clean slate
    assert policies.jobs() == set()
    assert feed(policies, [sample(t, 95 * M) for t in range(0, 40, 10)])[0][0] == 30


def test_a_clock_that_goes_back_starts_over(tmp_path):
    policies = load(tmp_path, MEMORY)
    assert feed(policies, [sample(t, 95 * M) for t in (1000, 1020, 5, 25)]) == []


# ---------------------------------------------------------------- plurm.conf errors

@pytest.mark.parametrize(("line", "message"), [
    ("FreezePolicy=memory,cpu", "invalid FreezePolicy item 'cpu' (valid: memory, device, or none)"),
    ("FreezeMemoryFraction=most", "invalid value 'most' for FreezeMemoryFraction"),
    ("FreezeMemoryFraction=0", "must be above 0"),
    ("FreezeMemoryFor=-1", "invalid value '-1' for FreezeMemoryFor (expected seconds"),
    ("FreezeMemoryGrowth=fast", "invalid value 'fast' for FreezeMemoryGrowth"),
    ("FreezeMemoryGrowthWindow=0", "must be at least 1 seconds"),
    ("FreezeMemroyFor=30", "unknown key 'FreezeMemroyFor' (valid: FreezeMemoryFor, "),
])
def test_a_bad_value_is_a_typed_error_naming_file_and_line(tmp_path, line, message):
    with pytest.raises(ConfError) as info:
        load(tmp_path, f"# freeze policy\nFreezePolicy=memory\n{line}\n")
    assert str(info.value).startswith(f"{tmp_path / 'plurm.conf'}:3: ")
    assert message in str(info.value)


def test_an_error_in_an_included_file_names_that_file(tmp_path):
    (tmp_path / "freeze.conf").write_text("\n\nFreezeMemoryFor=soon\n")
    with pytest.raises(ConfError, match=rf"^{tmp_path / 'freeze.conf'}:3: invalid value 'soon'"):
        load(tmp_path, "FreezePolicy=memory\nInclude freeze.conf\n")


def test_other_unknown_keys_and_idle_settings_are_warnings(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="plurm.nodeagent.freezepolicy")
    assert not load(tmp_path, "SomethingElse=1\nFreezeMemoryFor=10\n")
    assert "plurm.conf:1: unknown key 'SomethingElse', ignored" in caplog.text
    assert "plurm.conf:2: FreezeMemoryFor has no effect: FreezePolicy does not include memory" in caplog.text


def test_sizes_read_like_slurm():
    assert [size_text(n) for n in (512, 2048, 100 * M, 1536 * M, 40 << 30)] == ["512", "2K", "100M", "1.5G", "40G"]


# ---------------------------------------------------------------- third-party policies

class Acme:
    """A plugin whose policy freezes a job as soon as it has more than AcmeLimit bytes."""

    def __init__(self) -> None:
        self.seen: list[Sample] = []
        self.forgotten: list[int] = []

    @hookimpl
    def plurm_register_freeze_policies(self):
        return [FreezePolicyPlugin(name="acme", factory=self.factory, keys=("AcmeLimit",))]

    def factory(self, conf):
        limit = conf.get("AcmeLimit")
        if limit is None:
            return None
        if not limit.isdigit():
            raise conf.error("AcmeLimit", f"AcmeLimit={limit!r} is not a number")
        plugin = self

        class Policy:
            def observe(self, s):
                plugin.seen.append(s)
                if s.rss_bytes > int(limit):
                    return Verdict(s.job_id, "freeze", f"over\nAcme's\tlimit {limit}" + "!" * 200)
                return None

            def forget(self, job_id):
                plugin.forgotten.append(job_id)

        return Policy()


def acme_manager() -> tuple[Acme, PluginManager]:
    acme = Acme()
    pm = PluginManager(autoload=False)
    pm.register(acme, name="acme", package="acme-plurm")
    return acme, pm


def test_a_registered_plugin_policy_is_called_first_and_its_verdict_wins(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="plurm.nodeagent.freezepolicy")
    acme, pm = acme_manager()
    policies = load(tmp_path, MEMORY + "AcmeLimit=1000\n", pm)
    assert policies.names == ["acme", "memory"]
    assert "unknown key" not in caplog.text  # AcmeLimit is the plugin's
    assert policies.observe(sample(0, 10)) is None
    verdict = policies.observe(sample(10, 95 * M))
    assert acme.seen[-1].rss_bytes == 95 * M
    assert verdict.policy == "acme" and verdict.cause.startswith("over Acme's limit 1000!!")
    assert len(verdict.cause) == 100  # one short line, whatever the plugin wrote
    assert "job 7 (uid 1000): freeze policy acme: over Acme's limit 1000" in caplog.text
    policies.forget(7)
    assert acme.forgotten == [7]


def test_a_plugin_policy_its_factory_leaves_off_is_not_consulted(tmp_path):
    acme, pm = acme_manager()
    assert load(tmp_path, MEMORY, pm).names == ["memory"]


def test_a_plugin_reports_its_own_bad_value_with_file_and_line(tmp_path):
    _, pm = acme_manager()
    with pytest.raises(ConfError, match=r"plurm\.conf:2: AcmeLimit='lots' is not a number"):
        load(tmp_path, "FreezePolicy=memory\nAcmeLimit=lots\n", pm)


def test_a_plugin_that_raises_is_skipped_and_the_rest_carry_on(tmp_path, caplog):
    class Broken:
        @hookimpl
        def plurm_register_freeze_policies(self):
            return [FreezePolicyPlugin("wontstart", "no.such.module:factory"),
                    FreezePolicyPlugin("raises", lambda conf: self)]

        def observe(self, s):
            raise RuntimeError("boom")

        def forget(self, job_id):
            raise RuntimeError("boom again")

    caplog.set_level(logging.WARNING, logger="plurm.nodeagent.freezepolicy")
    pm = PluginManager(autoload=False)
    pm.register(Broken(), name="broken")
    policies = load(tmp_path, MEMORY, pm)
    assert policies.names == ["raises", "memory"]
    assert "freeze policy wontstart (from broken) failed to start" in caplog.text
    assert feed(policies, [sample(t, 95 * M) for t in range(0, 40, 10)])[0][1].policy == "memory"
    assert "freeze policy raises failed on job 7 and is skipped: RuntimeError: boom" in caplog.text
    policies.forget(7)
    assert "failed to forget job 7" in caplog.text


def test_a_plugin_may_not_take_a_builtin_name(tmp_path):
    class Memory:
        @hookimpl
        def plurm_register_freeze_policies(self):
            return [FreezePolicyPlugin("memory", lambda conf: None)]

    pm = PluginManager(autoload=False)
    pm.register(Memory(), name="fake-memory", package="fake-memory-pkg")
    with pytest.raises(DuplicatePluginError, match="'memory' from plurm, fake-memory-pkg"):
        load(tmp_path, MEMORY, pm)


def test_an_installed_entry_point_policy_is_loaded(tmp_path, monkeypatch):
    # A fake installed distribution, as pip would leave it: a module and its entry point.
    site = tmp_path / "site"
    (site / "acme_freeze-1.0.dist-info").mkdir(parents=True)
    (site / "acme_freeze-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-freeze\nVersion: 1.0\n")
    (site / "acme_freeze-1.0.dist-info" / "entry_points.txt").write_text("[plurm]\nacme_freeze = acme_freeze\n")
    (site / "acme_freeze.py").write_text(textwrap.dedent("""
        from plurm.nodeagent.freezepolicy import Verdict
        from plurm.plugins.hookspecs import hookimpl
        from plurm.plugins.types import FreezePolicyPlugin

        class Always:
            def observe(self, sample):
                return Verdict(sample.job_id, "freeze", "acme says so")

            def forget(self, job_id):
                pass

        @hookimpl
        def plurm_register_freeze_policies():
            return [FreezePolicyPlugin("always", "acme_freeze:factory")]

        def factory(conf):
            return Always()
        """))
    monkeypatch.syspath_prepend(str(site))
    policies = Policies.load(conf_dir(tmp_path, None))  # the process's own plugin manager
    assert policies.names == ["always"]
    assert policies.observe(sample(0, 1)) == Verdict(7, "freeze", "acme says so", "always")
