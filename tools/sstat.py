"""sstat: what a running step uses now, as sstat 22.05.8 prints it.

The controller names the running steps and their nodes (``step_info``, ``node_info``); each
node's plurmd reads the step's processes from /proc (``step_stat``, nodeagent/stepusage.py).
Per step, over its tasks on all its nodes: Max* (the largest task, its node and task id),
Ave* (the mean over tasks), MinCPU (the least CPU time), NTasks.  Memory is in KiB and
printed as sstat does (``2920K``; exact units, ``--noconvert``: bytes); CPU times as
``HH:MM:SS``.  What plurm cannot measure is printed as Slurm prints a missing value
(AveCPUFreq, energy: ``0``; ReqCPUFreq*: ``Unknown``).

Observed with sstat 22.05.8: no ``-j`` is ``You didn't give me any jobs to stat.`` (exit 1);
a job without steps ``couldn't get steps for job N`` and a missing step ``StepId=J.S not
found running.`` on stderr after the header (exit 0); ``-j J`` shows the lowest numbered
running step (the batch step when there is none), ``-a`` every step, the batch step first.
"""

from __future__ import annotations

import sys

from plurm.common.cli import Usage, getopt_or_usage
from plurm.grammar.hostlist import compress
from plurm.tools.sacctfmt import sacct_table
from plurm.tools.sacctusage import tres_time as cpu_text  # ([D-]HH:MM:SS, as sacct's AveCPU)

PROG = "sstat"
SHORT_OPTS = "aehij:no:pPvV"
LONG_OPTS = {"allsteps": ("a", 0), "helpformat": ("e", 0), "help": ("h", 0), "pidformat": ("i", 0),
             "jobs": ("j", 1), "noheader": ("n", 0), "noconvert": ("noconvert", 0), "format": ("o", 1),
             "fields": ("o", 1), "parsable": ("p", 0), "parsable2": ("P", 0), "usage": ("usage", 0),
             "verbose": ("v", 0), "version": ("V", 0)}

# name -> (width, right aligned), sstat 22.05.8's (measured from its header)
FIELDS: dict[str, tuple[int, bool]] = {}
for _item in """AveCPU:10 AveCPUFreq:10 AveDiskRead:12 AveDiskWrite:12 AvePages:10 AveRSS:10 AveVMSize:10
ConsumedEnergy:14 ConsumedEnergyRaw:17 JobID:-12 MaxDiskRead:12 MaxDiskReadNode:15 MaxDiskReadTask:15
MaxDiskWrite:12 MaxDiskWriteNode:16 MaxDiskWriteTask:16 MaxPages:8 MaxPagesNode:12 MaxPagesTask:14
MaxRSS:10 MaxRSSNode:10 MaxRSSTask:10 MaxVMSize:10 MaxVMSizeNode:14 MaxVMSizeTask:14 MinCPU:10
MinCPUNode:10 MinCPUTask:10 Nodelist:20 NTasks:8 Pids:20 ReqCPUFreq:13 ReqCPUFreqMin:13 ReqCPUFreqMax:13
ReqCPUFreqGov:13 TRESUsageInAve:14 TRESUsageInMax:14 TRESUsageInMaxNode:18 TRESUsageInMaxTask:18
TRESUsageInMin:14 TRESUsageInMinNode:18 TRESUsageInMinTask:18 TRESUsageInTot:14 TRESUsageOutAve:15
TRESUsageOutMax:15 TRESUsageOutMaxNode:19 TRESUsageOutMaxTask:19 TRESUsageOutMin:15
TRESUsageOutMinNode:19 TRESUsageOutMinTask:19 TRESUsageOutTot:15""".split():
    _name, _w = _item.split(":")
    FIELDS[_name] = (abs(int(_w)), int(_w) > 0)
NAMES = {name.lower(): name for name in FIELDS}
DEFAULT = ("JobID,MaxVMSize,MaxVMSizeNode,MaxVMSizeTask,AveVMSize,MaxRSS,MaxRSSNode,MaxRSSTask,AveRSS,"
           "MaxPages,MaxPagesNode,MaxPagesTask,AvePages,MinCPU,MinCPUNode,MinCPUTask,AveCPU,NTasks,"
           "AveCPUFreq,ReqCPUFreqMin,ReqCPUFreqMax,ReqCPUFreqGov,ConsumedEnergy,MaxDiskRead,MaxDiskReadNode,"
           "MaxDiskReadTask,AveDiskRead,MaxDiskWrite,MaxDiskWriteNode,MaxDiskWriteTask,AveDiskWrite,"
           "TRESUsageInAve,TRESUsageInMax,TRESUsageInMaxNode,TRESUsageInMaxTask,TRESUsageInMin,"
           "TRESUsageInMinNode,TRESUsageInMinTask,TRESUsageInTot,TRESUsageOutAve,TRESUsageOutMax,"
           "TRESUsageOutMaxNode,TRESUsageOutMaxTask,TRESUsageOutMin,TRESUsageOutMinNode,TRESUsageOutMinTask,"
           "TRESUsageOutTot")
PID_FORMAT = "JobID,Nodelist,Pids"
USAGE = "Usage: sstat [options] -j <job(.stepid)>\n"


def _error(text: str) -> str:
    return f"{PROG}: error: {text}\n"


class Options:
    def __init__(self) -> None:
        self.jobs: list[str] = []
        self.all_steps = False
        self.format = DEFAULT
        self.header = True
        self.delimiter: str | None = None
        self.trailing = False
        self.noconvert = False


def parse_format(text: str) -> list[tuple[str, int, bool]]:
    fields = []
    for item in text.split(","):
        name, pct, width = item.strip().partition("%")
        if not name:
            continue
        key = NAMES.get(name.lower())
        if key is None:
            raise Usage(_error(f'Invalid field requested: "{name}"'), 1, "stderr")
        w, right = FIELDS[key]
        if pct and width.lstrip("-").isdigit():
            right, w = int(width) >= 0, abs(int(width))
        fields.append((key, w, right))
    return fields


def parse_args(argv: list[str]) -> Options:
    o = Options()
    pairs, operands = getopt_or_usage(PROG, argv, SHORT_OPTS, LONG_OPTS)
    for key, value in pairs:
        if key == "a":
            o.all_steps = True
        elif key == "e":
            names = sorted(FIELDS, key=str.lower)
            rows = [names[i:i + 4] for i in range(0, len(names), 4)]
            raise Usage("".join("".join(n.ljust(20) for n in row)[:-1] + "\n" for row in rows), 0)
        elif key == "h":
            import os

            with open(os.path.join(os.path.dirname(__file__), "texts", "help_sstat.txt"), encoding="utf-8") as f:
                raise Usage(f.read(), 0)
        elif key == "usage":
            raise Usage(USAGE, 0)
        elif key == "i":
            o.format = PID_FORMAT
        elif key == "j":
            o.jobs += [j for j in value.split(",") if j]
        elif key == "n":
            o.header = False
        elif key == "noconvert":
            o.noconvert = True
        elif key == "o":
            o.format = value
        elif key in ("p", "P"):
            o.delimiter, o.trailing = "|", key == "p"
        elif key == "V":
            from plurm import write_version

            write_version()
            raise Usage("", 0)
    for operand in operands:  # sstat takes job ids as operands too
        o.jobs += [j for j in operand.split(",") if j]
    if not o.jobs:
        raise Usage(_error("You didn't give me any jobs to stat."), 1, "stderr")
    return o


# ------------------------------------------------------------------ values
def mem_text(kib: float, noconvert: bool) -> str:
    """KiB as sstat prints memory: ``2920K``, ``12M`` when exact; --noconvert: bytes."""
    if noconvert:
        return str(int(kib * 1024))
    value, units = int(round(kib)), "KMGTP"
    i = 0
    while value and value % 1024 == 0 and i < len(units) - 1:
        value //= 1024
        i += 1
    return f"{value}{units[i]}"


def bytes_text(n: float, noconvert: bool) -> str:
    """Bytes as sstat prints disk figures: raw below 1 MiB's worth of K steps, else ``1.00M``."""
    if noconvert or n < 1024 * 1024:
        return str(int(n))
    value, units = n / (1024 * 1024), "MGTP"
    i = 0
    while value >= 1024 and i < len(units) - 1:
        value /= 1024
        i += 1
    return f"{value:.2f}{units[i]}"


def step_row(step_name: str, nodes: list[str], samples: list[tuple[str, dict]], noconvert: bool) -> dict[str, str]:
    """One row from (node, task) samples of one step."""
    tasks = [(node, t) for node, t in samples if t.get("local_id") is not None]
    row = {"JobID": step_name, "Nodelist": compress(nodes), "NTasks": str(len(tasks)),
           "Pids": ",".join(str(p) for _, t in samples for p in t["pids"]),
           "AveCPUFreq": "0", "ReqCPUFreq": "Unknown", "ReqCPUFreqMin": "Unknown", "ReqCPUFreqMax": "Unknown",
           "ReqCPUFreqGov": "Unknown", "ConsumedEnergy": "0", "ConsumedEnergyRaw": "0"}
    if not tasks:
        return row

    def extreme(key: str, pick) -> tuple[str, dict]:
        return pick(tasks, key=lambda nt: nt[1][key])

    for name, key, text in (("VMSize", "vsize_kb", lambda v: mem_text(v, noconvert)),
                            ("RSS", "rss_kb", lambda v: mem_text(v, noconvert)),
                            ("Pages", "pages", lambda v: str(int(v))),
                            ("DiskRead", "read", lambda v: bytes_text(v, noconvert)),
                            ("DiskWrite", "write", lambda v: bytes_text(v, noconvert))):
        node, task = extreme(key, max)
        row[f"Max{name}"] = text(task[key])
        row[f"Max{name}Node"] = node
        row[f"Max{name}Task"] = str(task["global_id"])
        row[f"Ave{name}"] = text(sum(t[key] for _, t in tasks) / len(tasks))
    node, task = extreme("cpu_s", min)
    row.update(MinCPU=cpu_text(task["cpu_s"]), MinCPUNode=node, MinCPUTask=str(task["global_id"]),
               AveCPU=cpu_text(sum(t["cpu_s"] for _, t in tasks) / len(tasks)))
    tot_cpu = sum(t["cpu_s"] for _, t in tasks)
    max_node, max_task = extreme("rss_kb", max)
    row["TRESUsageInAve"] = (f"cpu={row['AveCPU']},fs/disk={int(sum(t['read'] for _, t in tasks) / len(tasks))},"
                             f"mem={row['AveRSS']},pages={row['AvePages']},vmem={row['AveVMSize']}")
    row["TRESUsageInMax"] = (f"cpu={cpu_text(max(t['cpu_s'] for _, t in tasks))},fs/disk={int(max(t['read'] for _, t in tasks))},"
                             f"mem={row['MaxRSS']},pages={row['MaxPages']},vmem={row['MaxVMSize']}")
    row["TRESUsageInMaxNode"] = f"mem={max_node},vmem={row['MaxVMSizeNode']}"
    row["TRESUsageInMaxTask"] = f"mem={max_task['global_id']},vmem={row['MaxVMSizeTask']}"
    row["TRESUsageInMin"] = f"cpu={row['MinCPU']}"
    row["TRESUsageInMinNode"] = f"cpu={row['MinCPUNode']}"
    row["TRESUsageInMinTask"] = f"cpu={row['MinCPUTask']}"
    row["TRESUsageInTot"] = f"cpu={cpu_text(tot_cpu)},fs/disk={sum(t['read'] for _, t in tasks)}"
    row["TRESUsageOutAve"] = f"fs/disk={int(sum(t['write'] for _, t in tasks) / len(tasks))}"
    row["TRESUsageOutMax"] = f"fs/disk={max(t['write'] for _, t in tasks)}"
    row["TRESUsageOutMaxNode"] = f"fs/disk={row['MaxDiskWriteNode']}"
    row["TRESUsageOutMaxTask"] = f"fs/disk={row['MaxDiskWriteTask']}"
    row["TRESUsageOutMin"] = f"fs/disk={min(t['write'] for _, t in tasks)}"
    row["TRESUsageOutMinNode"] = f"fs/disk={min(tasks, key=lambda nt: nt[1]['write'])[0]}"
    row["TRESUsageOutMinTask"] = f"fs/disk={min(tasks, key=lambda nt: nt[1]['write'])[1]['global_id']}"
    row["TRESUsageOutTot"] = f"fs/disk={sum(t['write'] for _, t in tasks)}"
    return row


def pick_steps(item: str, steps: list[dict], all_steps: bool) -> list[dict]:
    """The running steps ``-j item`` names (see the module's docstring)."""
    job, dot, step_id = item.partition(".")
    mine = [s for s in steps if str(s["job_id"]) == job.split("_")[0] or s.get("_name", "").startswith(job + ".")]
    if dot:
        return [s for s in mine if s["step_id"] == step_id]
    if all_steps:
        return sorted(mine, key=lambda s: (s["step_id"] != "batch", s["step_id"].isdigit(),
                                           int(s["step_id"]) if s["step_id"].isdigit() else 0))
    numbered = sorted((s for s in mine if s["step_id"].isdigit()), key=lambda s: int(s["step_id"]))
    return numbered[:1] or [s for s in mine if s["step_id"] == "batch"][:1]


def node_samples(step: dict, addrs: dict[str, tuple[str, int]], settings) -> list[tuple[str, dict]]:
    """(node, task) samples of one step from each of its nodes' plurmd."""
    from plurm.wire.client import ClientError, Connection

    samples: list[tuple[str, dict]] = []
    for node in step.get("nodes") or []:
        if node not in addrs:
            continue
        conn = Connection(settings, host=addrs[node][0], port=addrs[node][1], timeout=5.0)
        try:
            reply = conn.request("step_stat", {"job_id": step["job_id"], "step_id": str(step["step_id"])})
        except ClientError as exc:
            sys.stderr.write(_error(f"could not reach node {node}: {exc}"))
            continue
        finally:
            conn.close()
        for found in reply.get("steps", []):
            samples.extend((node, task) for task in found.get("tasks", []))
    return samples


def node_addresses(request) -> dict[str, tuple[str, int]]:
    return {n["name"]: (n.get("addr", "127.0.0.1"), n.get("port", 0))
            for n in request("node_info", {}).get("nodes", [])}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        opts = parse_args(argv)
        fields = parse_format(opts.format)
    except Usage as exc:
        (sys.stdout if exc.stream == "stdout" else sys.stderr).write(exc.text)
        return exc.code
    from plurm.tools.squeuesteps import step_id_text
    from plurm.wire.client import ClientError, read_settings, request

    try:
        settings = read_settings()
    except ClientError as exc:  # a slurm.conf the commands cannot read (SlurmctldPort=abc)
        sys.stderr.write(_error(str(exc)))
        return 1
    sys.stdout.write(sacct_table(fields, [], opts.header, opts.delimiter, opts.trailing))
    try:
        addrs = None
        for item in opts.jobs:
            job = item.partition(".")[0]
            try:
                reply = request("step_info", {"job_ids": [job]}, settings)
            except ClientError:
                reply = {}
            jobs = {j["job_id"]: j for j in reply.get("jobs", [])}
            steps = [dict(s, _name=step_id_text(s, jobs[s["job_id"]])) for s in reply.get("steps", [])
                     if s["job_id"] in jobs]
            if not steps:
                sys.stderr.write(_error(f"couldn't get steps for job {job}"))
                continue
            chosen = pick_steps(item, steps, opts.all_steps)
            if not chosen:
                sys.stderr.write(_error(f"StepId={item} not found running."))
                continue
            addrs = addrs if addrs is not None else node_addresses(lambda t, b: request(t, b, settings))
            rows = [step_row(s["_name"], s.get("nodes") or [], node_samples(s, addrs, settings), opts.noconvert)
                    for s in chosen]
            sys.stdout.write(sacct_table(fields, rows, False, opts.delimiter, opts.trailing))
    except ClientError as exc:
        sys.stderr.write(_error(str(exc)))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
