"""One trace through the simulator and through a real local cluster: the same start order.

The real run is the trace compressed in time (every time divided by SCALE: jobs are
``sleep`` of a few seconds, time limits whole minutes as sbatch takes them), submitted with
sbatch at the compressed submit times to `plurm cluster up`'s daemons (4 nodes x 4 CPUs,
sched/backfill, bf_interval=1).  The simulator runs the uncompressed trace on the same
slurm.conf.  The trace is built so that the real run's order holds with seconds of margin
against the machine's timing (no timing is asserted): job 1 runs; job 2 (the whole cluster)
waits for it with a reservation; job 3 backfills past job 2; job 4 arrives too big for the
free CPUs and starts after job 2; job 5 arrives on an idle cluster.
"""

from __future__ import annotations

import math
import time

from plurmtest import start_cluster
from simhelpers import HEADER, swf_line

from plurm.tools.simulate import engine, swf

SCALE = 5.0
ROWS = [  # job, submit, procs, run, requested time (trace seconds)
    (1, 0, 12, 30, 3600),
    (2, 0, 16, 10, 600),
    (3, 0, 4, 10, 600),
    (4, 20, 8, 10, 600),
    (5, 60, 16, 10, 600),
]


def test_simulator_and_real_cluster_start_jobs_in_the_same_order(tmp_path):
    text = HEADER.format(nodes=4, procs=16) + "\n".join(swf_line(*row) for row in ROWS) + "\n"
    trace = swf.parse_swf(text.splitlines())
    work = tmp_path / "work"
    work.mkdir()
    cluster = start_cluster(tmp_path, nodes=4, cpus=4)
    try:
        ids: dict[int, int] = {}
        t0 = time.monotonic()
        for job, submit, procs, run, req in ROWS:
            delay = t0 + submit / SCALE - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            minutes = max(1, math.ceil(req / SCALE / 60))
            ids[job] = cluster.sbatch("-n", str(procs), "-t", str(minutes), "-J", f"swf{job}",
                                      "--wrap", f"sleep {run / SCALE:g}", cwd=work)
        real = {}
        for job, plurm_id in ids.items():
            info = cluster.wait_state(plurm_id, {"COMPLETED"}, timeout=90)
            real[job] = info["start_time"]
        simulated = engine.simulate(engine.load_conf(str(cluster.conf)), trace.jobs)
    finally:
        cluster.down()
    sim = {r.job_id: r.start for r in simulated.records}
    assert all(start is not None for start in sim.values())
    sim_order = sorted(sim, key=lambda j: (sim[j], j))
    real_order = sorted(real, key=lambda j: real[j])
    assert sim_order == [1, 3, 2, 4, 5]
    assert real_order == sim_order
