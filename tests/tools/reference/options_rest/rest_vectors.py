"""The vectors of the options-rest differential (issue 14, item 8): options whose effect needs
hardware or services a site may lack, run on the real Slurm 22.05 by capture_rest.py and on plurm
by tests/tools/test_options_rest.py.

Each vector: ``id``, ``cmd`` (sbatch, srun, salloc), ``opts`` (the options under test).  The
command runs one small job that prints the job's variables these options could set (ENV_CMD);
sbatch waits for it (``--wait``, its output file is read back).  ``held``: sbatch submits it
held instead (``--reboot``: a reboot of the shared real cluster's nodes is not an experiment to
run; the held job shows what the controller recorded).  After the job, ``scontrol show job``'s
fields these options fill (SHOW_FIELDS) are kept too.
"""

from __future__ import annotations

VECTORS: list[dict] = []
_seen: set[str] = set()

# What a job's environment says of these options (the rest is the same as any job's).
ENV_CMD = ("env | grep -E '^SLURM_(CPU_FREQ_REQ|GPU_FREQ|NETWORK|POWER|CONTAINER|CLUSTER_NAME|CLUSTERS|"
           "SWITCHES|BATCH|CONTEXT|BB|BURST|X11)' | sort")
# scontrol show job's fields these options fill.
SHOW_FIELDS = ("JobState", "Reason", "Reboot", "Network", "Power", "BurstBuffer", "BurstBufferState",
               "CpuFreqMin", "CpuFreqMax", "CpuFreqGov", "Switches", "Wait-for-Switch", "BatchFeatures",
               "Container", "ClusterFeatures", "SelinuxContext", "TresPerNode")
BASE_ENV = {"HOME": "/root", "LANG": "C", "TZ": "UTC"}


def v(vid: str, cmd: str, opts: list[str], held: bool = False) -> None:
    if vid in _seen:
        raise ValueError(f"duplicate vector id {vid}")
    _seen.add(vid)
    VECTORS.append({"id": vid, "cmd": cmd, "opts": opts, "held": held})


for c in ("sbatch", "srun", "salloc"):
    v(f"{c}-cpu-freq-low", c, ["--cpu-freq=low"])
    v(f"{c}-cpu-freq-range", c, ["--cpu-freq=1000000-2000000:performance"])
    v(f"{c}-cpu-freq-bad", c, ["--cpu-freq=fastest"])
    v(f"{c}-gpu-freq", c, ["--gpu-freq=high"])
    v(f"{c}-gpu-freq-bad", c, ["--gpu-freq=fastest"])
    v(f"{c}-switches", c, ["--switches=1"])
    v(f"{c}-switches-wait", c, ["--switches=2@1:00"])
    v(f"{c}-bb", c, ["--bb=capacity=1G"])
    v(f"{c}-container", c, ["--container=/tmp"])
    v(f"{c}-clusters-other", c, ["-M", "othercluster"])
    v(f"{c}-clusters-self", c, ["--clusters=anchor"])
    v(f"{c}-cluster-constraint", c, ["--cluster-constraint=fast"])
    v(f"{c}-network", c, ["--network=sn_all"])
    v(f"{c}-power", c, ["--power=level"])
    v(f"{c}-context", c, ["--context=unconfined_u:unconfined_r:unconfined_t"])
v("sbatch-reboot-held", "sbatch", ["--reboot"], held=True)
v("sbatch-bbf", "sbatch", ["--bbf=bb.conf"])
v("sbatch-batch", "sbatch", ["--batch=fast"])
v("sbatch-wait", "sbatch", ["--wait"])
v("srun-x11", "srun", ["--x11"])
v("salloc-x11", "salloc", ["--x11"])

FILES = {"bb.conf": "#BB create_persistent name=x capacity=1G\n"}
