"""A job's accelerator usage over its samples (nodeagent/devices.py UsageStats): what sacct's
TRESUsageInMax/Ave show for gres/gpuutil and gres/gpumem."""

from __future__ import annotations

from plurm.nodeagent.devices import UsageStats


def test_max_and_mean_over_samples_of_several_gpus() -> None:
    usage = UsageStats()
    usage.add([{"util": 20, "mem_used_mb": 100}, {"util": 40, "mem_used_mb": 300}])  # mean 30, sum 400
    usage.add([{"util": 90, "mem_used_mb": 1000}, {"util": 70, "mem_used_mb": 0}])  # mean 80, sum 1000
    assert usage.as_tres() == ({"gres/gpumem": "1000M", "gres/gpuutil": "80"},
                               {"gres/gpumem": "700M", "gres/gpuutil": "55"})


def test_a_reading_the_board_cannot_give_is_left_out_not_fatal() -> None:
    usage = UsageStats()  # NVML answers "not supported" on some boards: the backend gives None
    usage.add([{"util": None, "mem_used_mb": None}, {"util": 50, "mem_used_mb": 100}])
    assert usage.as_tres() == ({"gres/gpumem": "100M", "gres/gpuutil": "50"},
                               {"gres/gpumem": "100M", "gres/gpuutil": "50"})


def test_no_samples_no_figures() -> None:
    assert UsageStats().as_tres() == ({}, {})
