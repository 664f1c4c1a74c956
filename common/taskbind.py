"""Where a step's tasks go: --distribution over nodes, --cpu-bind, --mem-bind, --gpu-bind on a node.

Pure functions, shared by srun (which tasks go to which node, the SLURM_* variables it
sets) and plurmd/plurmstepd (each task's CPU mask, NUMA nodes and GPUs).  CPUs are
*abstract* indices of a node as slurm.conf describes it: socket-major, then core, then
thread (``(socket * CoresPerSocket + core) * ThreadsPerCore + thread``), the numbering
Slurm's task/affinity uses; the node daemon maps them to the machine's CPUs.  A NUMA
locality domain ("ldom") is a socket, as Slurm takes it where the node has one NUMA node
per socket (or fewer sockets than NUMA nodes are known).

Texts are Slurm 22.05's (srun(1), and the captures in tests/integration/reference/binding/).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


class BindError(ValueError):
    """A binding request that cannot be honoured; the text is Slurm's."""


# ------------------------------------------------------------------ the node's layout
@dataclass(frozen=True)
class Layout:
    sockets: int = 1
    cores: int = 1  # per socket
    threads: int = 1  # per core

    @property
    def cpus(self) -> int:
        return self.sockets * self.cores * self.threads

    def socket_of(self, cpu: int) -> int:
        return cpu // (self.cores * self.threads)

    def core_of(self, cpu: int) -> int:
        """The node-wide core index of an abstract CPU."""
        return cpu // self.threads

    def socket_cpus(self, socket: int) -> list[int]:
        per = self.cores * self.threads
        return list(range(socket * per, socket * per + per))

    def core_cpus(self, core: int) -> list[int]:
        return list(range(core * self.threads, core * self.threads + self.threads))


# ------------------------------------------------------------------ lists: 0x3,1*2,...
_ITEM = re.compile(r"(0x[0-9a-f]+|[0-9a-f]+)(?:\*([0-9]+))?", re.IGNORECASE)
MAX_LIST = 4096  # items after expanding *count (a hostile 0*99999999 is refused, not built)


def parse_list(text: str, what: str) -> list[int]:
    """Numbers (decimal, or hex with 0x; a mask is always hex) with ``*count`` repeats."""
    out: list[int] = []
    for item in text.split(","):
        m = _ITEM.fullmatch(item.strip())
        if not m:
            raise BindError(f"Failed to validate number: {item}")
        hexa = what.startswith("mask") or m.group(1).lower().startswith("0x")
        if not hexa and not m.group(1).isdigit():
            raise BindError(f"Failed to validate number: {item}")
        value = int(m.group(1), 16 if hexa else 10)
        count = int(m.group(2) or 1)
        if count < 1 or len(out) + count > MAX_LIST:
            raise BindError(f"Failed to validate number: {item}")
        out.extend([value] * count)
    return out


# ------------------------------------------------------------------ --cpu-bind
CPU_BIND_KINDS = ("none", "rank", "map_cpu", "mask_cpu", "rank_ldom", "map_ldom", "mask_ldom",
                  "sockets", "cores", "threads", "ldoms", "boards")


@dataclass(frozen=True)
class CpuBind:
    kind: str = ""  # "": not asked for (TaskPluginParam and auto binding decide)
    values: tuple[int, ...] = ()
    verbose: bool = False


def parse_cpu_bind(text: str | None) -> CpuBind:
    """--cpu-bind / SLURM_CPU_BIND: ``[{quiet,verbose},]type``; a map or mask list runs on
    over the commas that follow it (``map_cpu:0,1``)."""
    if not text:
        return CpuBind()
    kind, verbose, values = "", False, []
    listing = False
    for word in text.split(","):
        low = word.strip().lower()
        head, colon, rest = low.partition(":")
        if colon and head in ("map_cpu", "mask_cpu", "map_ldom", "mask_ldom"):
            kind, listing, values = head, True, parse_list(rest, head)
        elif low in ("v", "verbose"):
            verbose, listing = True, False
        elif low in ("q", "quiet"):
            verbose, listing = False, False
        elif low in ("no", "none"):
            kind, listing = "none", False
        elif low == "help":  # (srun answers it before any task: tools/srun.py)
            listing = False
        elif low in CPU_BIND_KINDS:
            kind, listing = low, False
        elif listing:
            values.extend(parse_list(low, kind))
        else:
            raise BindError(f'unrecognized --cpu-bind argument "{word}"')
    return CpuBind(kind, tuple(values), verbose)


@dataclass(frozen=True)
class PluginParam:
    """slurm.conf TaskPluginParam: a default binding, verbosity, and auto binding's fallback."""

    default: str = ""  # none | sockets | cores | threads
    verbose: bool = False
    autobind: str = ""


def parse_plugin_param(text: str | None) -> PluginParam:
    default, verbose, autobind = "", False, ""
    for word in (text or "").split(","):
        low = word.strip().lower()
        if low in ("none", "sockets", "cores", "threads"):
            default = low
        elif low == "verbose":
            verbose = True
        elif low.startswith("autobind="):
            autobind = low.split("=", 1)[1] if low.split("=", 1)[1] in ("threads", "cores", "sockets") else ""
    return PluginParam(default, verbose, autobind)


def _units(layout: Layout, cpus: list[int], unit: str) -> list[list[list[int]]]:
    """The job's CPUs on a node as units to hand out, per socket: a core's CPUs for ``cores``
    (a task bound to cores gets whole ones), single CPUs otherwise."""
    by_socket: dict[int, list[list[int]]] = {}
    seen: set[int] = set()
    for cpu in cpus:
        if cpu in seen:
            continue
        group = [c for c in layout.core_cpus(layout.core_of(cpu)) if c in cpus] if unit == "cores" else [cpu]
        seen.update(group)
        by_socket.setdefault(layout.socket_of(cpu), []).append(group)
    return [by_socket[s] for s in sorted(by_socket)]


def place_cpus(layout: Layout, job_cpus: Sequence[int], ntasks: int, cpus_per_task: int,
               level2: str = "", unit: str = "threads") -> list[list[int]]:
    """The CPUs each of a node's ``ntasks`` tasks uses among the job's, by the distribution's
    second level: ``block`` fills a socket before the next, ``cyclic`` (Slurm's default)
    takes each task's CPUs from the next socket in turn, ``fcyclic`` each of a task's units
    from the next socket.  Tasks beyond the CPUs (overcommit) start again from the first."""
    cpus = sorted(set(job_cpus))
    if not cpus:
        return [[] for _ in range(ntasks)]
    sockets = _units(layout, cpus, unit)
    need = max(1, -(-cpus_per_task // layout.threads)) if unit == "cores" else max(1, cpus_per_task)
    if level2 == "block" or len(sockets) == 1:
        flat = [u for s in sockets for u in s]
        return [sorted({c for k in range(need) for c in flat[(t * need + k) % len(flat)]}) for t in range(ntasks)]
    cursor = [0] * len(sockets)
    total = sum(len(s) for s in sockets)
    handed = 0
    turn = 0
    out: list[list[int]] = []
    for _t in range(ntasks):
        mine: set[int] = set()
        for _k in range(need):
            if handed and handed % total == 0:
                cursor = [0] * len(sockets)
            s = turn % len(sockets)
            while cursor[s] >= len(sockets[s]):  # a socket handed out: the next one
                s = (s + 1) % len(sockets)
            mine.update(sockets[s][cursor[s]])
            cursor[s] += 1
            handed += 1
            if level2 == "fcyclic":
                turn += 1
        if level2 != "fcyclic":
            turn += 1
        out.append(sorted(mine))
    return out


@dataclass(frozen=True)
class CpuMasks:
    """What --cpu-bind comes to on one node: each local task's abstract CPUs (None: unbound;
    an empty set: a CPU the node does not have, the task fails to launch as in Slurm), and the
    word of the verbose lines (``cpu-bind-cores=MASK``: unit "cores", word "MASK")."""

    masks: list[set[int]] | None
    verbose: bool
    word: str = ""
    unit: str = ""


UNIT_KINDS = ("sockets", "cores", "threads", "ldoms", "boards")


def cpu_masks(bind: CpuBind, layout: Layout, job_cpus: Sequence[int], ntasks: int, cpus_per_task: int = 1,
              param: PluginParam = PluginParam(), level2: str = "") -> CpuMasks:
    """The tasks' masks on a node, as task/affinity computes them (the caller checks that
    task/affinity is configured).  ``job_cpus``: the job's abstract CPUs on this node.  With
    no --cpu-bind, TaskPluginParam's default (or autobind) applies; else the tasks are unbound
    (22.05.8 with task/affinity on this machine's anchor: no binding, no variables)."""
    verbose = bind.verbose or param.verbose
    allowed = sorted(set(job_cpus)) or list(range(layout.cpus))
    cpt = min(max(1, cpus_per_task), layout.cpus)  # (a hostile -c 10**9 must not spin the node daemon)
    kind = bind.kind or param.default or param.autobind
    if not kind:
        return CpuMasks(None, verbose)
    if kind == "none":
        return CpuMasks(None, verbose, "NONE")
    if kind in ("map_cpu", "mask_cpu", "map_ldom", "mask_ldom") and not bind.values:
        raise BindError(f"--cpu-bind={kind}: no list")
    if kind in UNIT_KINDS:
        placed = place_cpus(layout, allowed, ntasks, cpt, level2, "cores" if kind == "cores" else "threads")
        masks = []
        for p in placed:
            if kind == "cores":
                masks.append(set(p))
            elif kind == "threads":
                masks.append(set(p))
            else:  # sockets, ldoms, boards: the whole socket, within the job's CPUs
                masks.append({c for cpu in p for c in layout.socket_cpus(layout.socket_of(cpu))} & set(allowed))
        return CpuMasks(masks, verbose, "MASK", kind)
    ldoms = layout.sockets
    masks = []
    for t in range(ntasks):
        if kind == "map_cpu":
            cpu = bind.values[t % len(bind.values)]
            masks.append({cpu} if cpu < layout.cpus else set())
        elif kind == "mask_cpu":
            value = bind.values[t % len(bind.values)]
            masks.append({i for i in range(layout.cpus) if value >> i & 1} if value >> layout.cpus == 0 else set())
        elif kind == "rank":
            masks.append({(t * cpt + k) % layout.cpus for k in range(cpt)})
        elif kind == "rank_ldom":
            masks.append(set(layout.socket_cpus(t % ldoms)))
        elif kind == "map_ldom":
            dom = bind.values[t % len(bind.values)]
            masks.append(set(layout.socket_cpus(dom)) if dom < ldoms else set())
        elif kind == "mask_ldom":
            value = bind.values[t % len(bind.values)]
            masks.append({c for d in range(ldoms) if value >> d & 1 for c in layout.socket_cpus(d)}
                         if value >> ldoms == 0 else set())
    word = {"map_cpu": "MAP", "mask_cpu": "MASK", "rank": "RANK", "rank_ldom": "LDRANK", "map_ldom": "LDMAP",
            "mask_ldom": "LDMASK"}[kind]
    return CpuMasks(masks, verbose, word)


def mask_hex(cpus: Iterable[int]) -> str:
    value = 0
    for c in cpus:
        value |= 1 << c
    return f"{value:#x}"


def cpu_bind_line(result: CpuMasks, node: str, rank: int, local_id: int, pid: int, mask: set[int],
                  failed: bool = False) -> str:
    """task/affinity's verbose line (22.05.8: ``cpu-bind=MAP  - n1, task  0  0 [4540]: mask
    0x2 set``; NONE shows mask 0x0 and no "set"; a mask that cannot be set ends FAILED)."""
    head = f"cpu-bind-{result.unit}" if result.unit else "cpu-bind"
    where = f"{head}={result.word:<4} - {node}, task {rank:2d} {local_id:2d} [{pid}]: mask "
    if result.word == "NONE":
        return where + "0x0\n"
    return where + mask_hex(mask) + (" set FAILED\n" if failed else " set\n")


def option_env(cpu_bind: str | None, mem_bind: str | None) -> dict[str, str]:
    """The SLURM_CPU_BIND* and SLURM_MEM_BIND* variables srun 22.05.8 gives a step's tasks for
    --cpu-bind/--mem-bind (whatever TaskPlugin is): the request as parsed, not the masks.
    For sockets/cores/threads/ldoms/boards 22.05.8 puts the option's text in the list and
    after the type (``SLURM_CPU_BIND=verbose,coresverbose,cores``): kept, as scripts see it."""
    env: dict[str, str] = {}
    try:
        if cpu_bind:
            bind = parse_cpu_bind(cpu_bind)
            env.update(_bind_vars("CPU", bind.kind, bind.values, bind.verbose, cpu_bind, UNIT_KINDS))
        if mem_bind:
            mem = parse_mem_bind(mem_bind)
            env.update(_bind_vars("MEM", mem.kind, mem.values, mem.verbose, mem_bind, (), mem.prefer))
    except BindError:  # (srun's option parser has refused what does not parse)
        pass
    return env


def batch_env(options: dict[str, object]) -> dict[str, str]:
    """What sbatch 22.05.8 puts in a batch job's environment for -m, --mem-bind, --gpu-bind
    (sbatch.env_options.txt): srun inside the job reads them as its own options."""
    env: dict[str, str] = {}
    if options.get("distribution"):
        env.update(distribution_env(str(options["distribution"])))
    if options.get("gpu-bind"):
        env["SLURM_GPU_BIND"] = str(options["gpu-bind"])
    if options.get("mem-bind"):
        text = str(options["mem-bind"])
        env["SLURM_MEM_BIND"] = text
        try:
            env["SLURM_MEM_BIND_VERBOSE"] = "verbose" if parse_mem_bind(text).verbose else "quiet"
        except BindError:
            pass
    return env


def distribution_env(text: str) -> dict[str, str]:
    """SLURM_DISTRIBUTION as 22.05.8's srun and sbatch set it (plane=N: "plane", with
    SLURM_DIST_PLANESIZE=N; reference/binding/none.dist_plane2_env.txt)."""
    m = re.match(r"plane=(\d+)", text, re.IGNORECASE)
    if m:
        return {"SLURM_DISTRIBUTION": "plane" + text[m.end():], "SLURM_DIST_PLANESIZE": m.group(1)}
    return {"SLURM_DISTRIBUTION": text}


def plane_from_env(environ: dict[str, str]) -> None:
    """srun's input pair: SLURM_DISTRIBUTION=plane with SLURM_DIST_PLANESIZE=N (what sbatch and
    salloc hand down) is -m plane=N."""
    dist, size = environ.get("SLURM_DISTRIBUTION", ""), environ.get("SLURM_DIST_PLANESIZE", "")
    if dist.lower().startswith("plane") and not dist.lower().startswith("plane=") and size.isdigit():
        environ["SLURM_DISTRIBUTION"] = f"plane={size}{dist[5:]}"


def gpus_per_socket_request(value: str, sockets: object) -> list[dict[str, object]]:
    """--gpus-per-socket=[type:]N with --sockets-per-node=S: N x S GPUs on every node (the
    GRES request JobSpec.gres_req holds; a node has a socket's GPUs on that socket)."""
    kind, _, count = value.rpartition(":")
    try:
        n = int(count)
        s = int(sockets) if isinstance(sockets, (int, str)) and not isinstance(sockets, bool) else 1
    except ValueError:
        return []
    if n < 1 or s < 1:
        return []
    return [{"name": "gpu", "type": kind or None, "count": n * s, "per": "node"}]


def _bind_vars(what: str, kind: str, values: tuple[int, ...], verbose: bool, raw: str,
               units: tuple[str, ...], prefer: bool = False) -> dict[str, str]:
    """22.05.8's four (five with prefer) variables; a bare ``verbose`` is ``SLURM_CPU_BIND=verbose``
    with the option as its list (reference/binding/none.env_*.txt)."""
    word = "verbose" if verbose else "quiet"
    if kind.startswith(("map_", "mask_")):
        listed = ",".join(f"{v:x}" if kind.startswith("mask_") else str(v) for v in values)
        type_ = f"{kind}:"
    elif kind in units or not kind:
        listed, type_ = raw, kind
    else:
        listed, type_ = "", kind
    env = {f"SLURM_{what}_BIND_VERBOSE": word, f"SLURM_{what}_BIND_TYPE": type_,
           f"SLURM_{what}_BIND_LIST": listed,
           f"SLURM_{what}_BIND": word + ("," + ("prefer," if prefer else "") + type_ + listed if type_ else "")}
    if prefer:
        env[f"SLURM_{what}_BIND_PREFER"] = "prefer"
    return env


# ------------------------------------------------------------------ --distribution
@dataclass(frozen=True)
class Distribution:
    nodes: str = "block"  # block | cyclic | plane | arbitrary
    plane: int = 0
    sockets: str = ""  # the second level (CPUs of a node): block | cyclic | fcyclic; "": cyclic
    cores: str = ""
    pack: str = ""  # "Pack" | "NoPack" | ""


def parse_distribution(text: str | None) -> Distribution:
    """-m/--distribution (grammar/values.parse_distribution has checked its shape)."""
    if not text:
        return Distribution()
    main, _comma, pack = text.partition(",")
    levels = main.split(":")
    first = levels[0].lower()
    plane = 0
    if first.startswith("plane="):
        try:
            plane = int(first.split("=", 1)[1])
        except ValueError:
            raise BindError("Invalid --distribution specification") from None
        if plane < 1:
            raise BindError("Invalid --distribution specification")
        first = "plane"
    elif first == "*":
        first = "block"
    if first not in ("block", "cyclic", "arbitrary", "plane"):
        raise BindError("Invalid --distribution specification")
    second = [lv.lower().replace("*", "") for lv in levels[1:]] + ["", ""]
    return Distribution(first, plane, second[0], second[1],
                        {"pack": "Pack", "nopack": "NoPack"}.get(pack.lower(), ""))


def rank_layout(dist: Distribution, counts: Sequence[int]) -> list[list[int]]:
    """The global ranks each node runs, for tasks-per-node ``counts``: block gives each node a
    run of consecutive ranks, cyclic deals them out one at a time, plane=N N at a time (a
    node that is full is skipped)."""
    if dist.nodes not in ("cyclic", "plane"):
        out, rank = [], 0
        for c in counts:
            out.append(list(range(rank, rank + c)))
            rank += c
        return out
    chunk = max(1, dist.plane) if dist.nodes == "plane" else 1  # (bare "plane": one at a time, never a stall)
    out = [[] for _ in counts]
    rank, total = 0, sum(counts)
    while rank < total:
        for i, c in enumerate(counts):
            take = min(chunk, c - len(out[i]), total - rank)
            if take > 0:
                out[i].extend(range(rank, rank + take))
                rank += take
    return out


# ------------------------------------------------------------------ --mem-bind
@dataclass(frozen=True)
class MemBind:
    kind: str = ""  # none | local | rank | map_mem | mask_mem | prefer
    values: tuple[int, ...] = ()
    verbose: bool = False
    prefer: bool = False


def parse_mem_bind(text: str | None) -> MemBind:
    if not text:
        return MemBind()
    kind, verbose, prefer, values = "", False, False, []
    listing = False
    for word in text.split(","):
        low = word.strip().lower()
        head, colon, rest = low.partition(":")
        if colon and head in ("map_mem", "mask_mem", "map_ldom", "mask_ldom"):
            kind = "map_mem" if head.startswith("map") else "mask_mem"
            listing, values = True, parse_list(rest, kind)
        elif low in ("v", "verbose"):
            verbose, listing = True, False
        elif low in ("q", "quiet"):
            verbose, listing = False, False
        elif low in ("p", "prefer"):
            prefer, listing = True, False
        elif low in ("no", "none"):
            kind, listing = "none", False
        elif low in ("local", "rank"):
            kind, listing = low, False
        elif low in ("sort", "nosort", "help"):
            listing = False
        elif listing:
            values.extend(parse_list(low, kind))
        else:
            raise BindError(f'unrecognized --mem-bind argument "{word}"')
    return MemBind(kind, tuple(values), verbose, prefer)


def mem_nodes(bind: MemBind, numa_nodes: Sequence[int], cpu_numa: Sequence[set[int]]) -> list[set[int]] | None:
    """Each task's NUMA nodes (None: no policy set).  ``numa_nodes``: the node's NUMA nodes
    (from /sys/devices/system/node); ``cpu_numa``: the NUMA nodes of each task's CPUs."""
    if bind.kind in ("", "none"):
        return None
    known = set(numa_nodes)
    out: list[set[int]] = []
    for t, local in enumerate(cpu_numa):
        if bind.kind == "local":
            chosen = set(local) or set(known)
        elif bind.kind == "rank":
            chosen = {sorted(known)[t % len(known)]}
        elif bind.kind == "map_mem":
            chosen = {bind.values[t % len(bind.values)]}
        else:
            value = bind.values[t % len(bind.values)]
            chosen = {n for n in known if value >> n & 1}
        if not chosen or not chosen <= known:
            raise BindError(f"--mem-bind: NUMA node(s) {sorted(chosen - known) or '(none)'} not on this node "
                            f"(it has {','.join(str(n) for n in sorted(known))})")
        out.append(chosen)
    return out


def mem_bind_line(bind: MemBind, host: str, rank: int, local_id: int, pid: int, mask: set[int]) -> str:
    """task/affinity's verbose line for --mem-bind (22.05.8 names the host, not the node:
    ``mem-bind=LOC - vm, task  0  0 [5344]: mask 0x1 set``)."""
    word = {"local": "LOC", "rank": "RANK", "map_mem": "MAP", "mask_mem": "MASK"}.get(bind.kind, "NONE")
    return f"mem-bind={word} - {host}, task {rank:2d} {local_id:2d} [{pid}]: mask {mask_hex(mask)} set\n"


# ------------------------------------------------------------------ --gpu-bind
@dataclass(frozen=True)
class GpuBind:
    kind: str = ""  # closest | single | map_gpu | mask_gpu | per_task | none
    values: tuple[int, ...] = ()
    verbose: bool = False


def parse_gpu_bind(text: str | None) -> GpuBind:
    if not text:
        return GpuBind()
    verbose = False
    body = text
    if body.lower().startswith("verbose,"):
        verbose, body = True, body[8:]
    low = body.lower()
    head, colon, rest = low.partition(":")
    if colon and head in ("map_gpu", "mask_gpu"):
        return GpuBind(head, tuple(parse_list(rest, head)), verbose)
    if colon and head in ("single", "per_task"):
        values = parse_list(rest, head)
        if len(values) != 1 or values[0] < 1:
            raise BindError(f"Invalid --gpu-bind argument: gpu:{text}")
        return GpuBind(head, tuple(values), verbose)
    if low.startswith("c"):
        return GpuBind("closest", (), verbose)
    if low.startswith("n"):
        return GpuBind("none", (), verbose)
    raise BindError(f"Invalid --gpu-bind argument: gpu:{text}")


def task_gpus(bind: GpuBind, gpus: Sequence[int], ntasks: int, task_numa: Sequence[set[int]] = (),
              gpu_numa: Sequence[int | None] = ()) -> list[list[int]] | None:
    """Each local task's GPUs among the job's ``gpus`` on the node (unit indices, sorted);
    None: every task sees them all.  map_gpu/mask_gpu name the job's GPUs by their order
    on the node (0 = the job's first), as Slurm does when devices are constrained.
    ``task_numa``/``gpu_numa``: for closest, the NUMA nodes of each task's CPUs and of each
    of the job's GPUs in ``gpus``' sorted order (None: unknown, close to every task)."""
    gpus = sorted(gpus)
    if bind.kind in ("", "none") or not gpus:
        return None
    out: list[list[int]] = []
    for t in range(ntasks):
        if bind.kind == "single":
            out.append([gpus[(t // bind.values[0]) % len(gpus)]])
        elif bind.kind == "per_task":
            n = bind.values[0]
            out.append([gpus[(t * n + k) % len(gpus)] for k in range(min(n, len(gpus)))])
        elif bind.kind == "map_gpu":
            idx = bind.values[t % len(bind.values)]
            if idx >= len(gpus):
                raise BindError(f"task {t}: map_gpu {idx} is not one of the job's {len(gpus)} GPU(s) on this node")
            out.append([gpus[idx]])
        elif bind.kind == "mask_gpu":
            value = bind.values[t % len(bind.values)]
            chosen = [g for i, g in enumerate(gpus) if value >> i & 1]
            if not chosen:
                raise BindError(f"task {t}: mask_gpu {value:#x} holds none of the job's GPUs on this node")
            out.append(chosen)
        else:  # closest: the GPUs on the task's NUMA nodes; none there, all of them
            mine = set(task_numa[t]) if t < len(task_numa) else set()
            near = [g for i, g in enumerate(gpus)
                    if i < len(gpu_numa) and (gpu_numa[i] is None or gpu_numa[i] in mine)]
            out.append(near or list(gpus))
    return out


def gpu_bind_line(task_gpus: Sequence[int], job_gpus: Sequence[int], visible: str) -> str:
    """The gres plugin's --gpu-bind=verbose line, on the task's stderr (22.05.8: ``gpu-bind:
    usable_gres=0x1; bit_alloc=0x3; local_inx=0; global_list=0; local_list=0``; local_inx is 0
    for every task there)."""
    return f"gpu-bind: usable_gres={mask_hex(task_gpus)}; bit_alloc={mask_hex(job_gpus)}; local_inx=0; " \
           f"global_list={','.join(str(g) for g in sorted(task_gpus))}; local_list={visible}\n"
