"""Small traces whose schedules are worked out by hand: the simulator must drive the
core to exactly these start times (seconds from the trace's start)."""

from __future__ import annotations

from simhelpers import conf_text, simulate_rows, swf_line


def test_fifo_with_sched_builtin():
    # 2 nodes x 4 CPUs.  Job 1 fills the cluster until 100.  Job 2 (8 CPUs) is next; job 3
    # (2 CPUs) would fit beside nothing while job 2 waits, and sched/builtin never lets a
    # later job pass the top one: it waits for job 2 to end (150), and starts there with
    # job 4 (2 + 4 CPUs fit together).
    conf = conf_text(2, 4, "SchedulerType=sched/builtin\n")
    rows = [swf_line(1, 0, 8, 100, 200), swf_line(2, 10, 8, 50, 200), swf_line(3, 20, 2, 10, 200),
            swf_line(4, 30, 4, 20, 200)]
    got = simulate_rows(conf, rows)
    assert got == {1: (0, 100), 2: (100, 150), 3: (150, 160), 4: (150, 170)}


def test_backfill_past_a_reservation_without_delaying_it():
    # 2 nodes x 4 CPUs, sched/backfill, a cycle every second.  Job 1 (4 CPUs, limit 10
    # min) runs from 0; job 2 needs all 8 CPUs and gets a reservation at job 1's limit
    # (600).  Job 3 (2 CPUs, limit 5 min) ends by 420 <= 600: it backfills at 120.  Job 4
    # (2 CPUs, limit 15 min) would hold CPUs past 600: no backfill, it waits for job 2.
    # Job 1 ends at 540, job 2 starts then (never later than its reservation) and job 4
    # after it.
    conf = conf_text(2, 4, "SchedulerType=sched/backfill\nSchedulerParameters=bf_interval=1\n")
    rows = [swf_line(1, 0, 4, 540, 600), swf_line(2, 60, 8, 600, 1200), swf_line(3, 120, 2, 300, 300),
            swf_line(4, 180, 2, 300, 900)]
    got = simulate_rows(conf, rows)
    assert got == {1: (0, 540), 2: (540, 1140), 3: (120, 420), 4: (1140, 1440)}
    # The same trace in strict order: job 3 waits behind job 2.
    fifo = simulate_rows(conf_text(2, 4, "SchedulerType=sched/builtin\n"), rows)
    assert fifo[3] == (1140, 1440) and fifo[2] == (540, 1140)


def test_fair_share_starts_the_light_users_job_first():
    # 1 node x 4 CPUs, priority/multifactor with only the fair share factor.  User 1 ran
    # job 1 (0-500) and runs job 2 (600-1600).  While job 2 runs, user 1 submits job 3
    # (700) and user 2 job 4 (800).  User 2 has no usage: its job has the higher priority
    # and starts first when job 2 ends, although user 1 asked first.
    conf = conf_text(1, 4, "SchedulerType=sched/builtin\nPriorityType=priority/multifactor\n"
                           "PriorityWeightFairshare=10000\nPriorityWeightAge=0\nPriorityWeightJobSize=0\n"
                           "PriorityWeightPartition=0\nPriorityWeightQOS=0\n")
    rows = [swf_line(1, 0, 4, 500, 600, user=1), swf_line(2, 600, 4, 1000, 1200, user=1),
            swf_line(3, 700, 4, 100, 600, user=1), swf_line(4, 800, 4, 100, 600, user=2)]
    got = simulate_rows(conf, rows)
    assert got[2] == (600, 1600)
    assert got[4] == (1600, 1700)
    assert got[3] == (1700, 1800)
    # With priority/basic (first come, first served) user 1's job goes first.
    basic = simulate_rows(conf_text(1, 4, "SchedulerType=sched/builtin\n"), rows)
    assert basic[3] == (1600, 1700) and basic[4] == (1700, 1800)


def test_a_job_past_its_time_limit_is_ended_by_the_core_at_the_limit():
    # Job 1 asks for 2 minutes but would run 500 s: tick() terminates it at 120 and job 2
    # starts then.
    conf = conf_text(1, 4, "SchedulerType=sched/builtin\n")
    rows = [swf_line(1, 0, 4, 500, 120), swf_line(2, 10, 4, 50, 600)]
    got = simulate_rows(conf, rows)
    assert got == {1: (0, 120), 2: (120, 170)}
