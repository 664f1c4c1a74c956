"""The one option table shared by sbatch, srun and salloc.

Why a table: the three commands accept largely the same options with the same value rules
and the same input environment variables (SBATCH_*, SALLOC_*, SLURM_* for srun), so each
option is described once -- long name, short letter, argument kind, the commands that accept
it, its value parser (a key of ``PARSERS``), its input variables, and whether repeats
accumulate -- and the three front ends read it.  The command line itself is read by the
command-line kit (``plurm.common.cli``, through ``plurm.tools.sbatch_cli``): grammar is the
bottom layer and may not import it.

This module is on every command's start-up path: it imports nothing beyond what ``site``
already loaded, and builds the table from a text block with str.split.  Measured with
bytecode cached: values 0.6 ms, options 1.0 ms, script 0.2 ms, sbatch_cli 0.4 ms (python
3.11, ``python -X importtime``).  No lark, no dataclasses (5.6 ms), no eager re.compile.
"""
from __future__ import annotations

from collections import namedtuple

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: `typing` costs milliseconds of every sbatch start-up
    from collections.abc import Callable, Iterator
    from typing import Any

from . import structvalues, values
from .getuserenv import parse_get_user_env
from .values import OptionError, OptionValueError

__all__ = ["Option", "OptionError", "OptionValueError", "OPTIONS", "ALL_OPTIONS", "PARSERS", "options_for",
           "env_inputs"]

PROGS = ("sbatch", "srun", "salloc")
_CMD_LETTER = {"b": "sbatch", "r": "srun", "a": "salloc"}
_ENV_PREFIX = {"b": "SBATCH_", "r": "SLURM_", "a": "SALLOC_"}


# One row of the table.  A collections.namedtuple (no typing or dataclasses import on
# sbatch's start-up path):
#   name        long name, as the commands spell it
#   short       short letter, if any
#   arg         "none" | "required" | "optional"
#   parser      key of PARSERS (below)
#   commands    frozenset of sbatch/srun/salloc that accept it
#   env         command -> tuple of input environment variable names
#   key         the option it sets (tasks-per-node sets ntasks-per-node)
#   accumulate  repeats add up (-v) instead of the last one winning
#   ident       getopt identity: an identical alias (cpu_bind) shares it
Option = namedtuple("Option", ["name", "short", "arg", "parser", "commands", "env", "key", "accumulate", "ident"],
                    defaults=(False, ""))


# Columns: long name | short | arg (n=none r=required o=optional) | parser | commands
# (b=sbatch r=srun a=salloc) | input variables | optional "=key" when the option sets another
# one's value ("+" after the key: repeats accumulate).  Input variables: "b:NAME" is
# SBATCH_NAME, "a:NAME" SALLOC_NAME, "r:NAME" SLURM_NAME (srun reads SLURM_*), "*:NAME" the
# prefixed NAME for each accepting command, "r=FULL" a variable named in full.  A name may
# have several rows with disjoint command sets when the commands disagree (srun --wait=sec,
# sbatch --wait).  Row order is getopt_long's table order: ambiguity messages list the
# candidates in it (observed: `sbatch --c=1` lists --cluster-constraint first).
# Names and variables: the 22.05 man pages (INPUT ENVIRONMENT VARIABLES) plus what sbatch
# 22.05.8 was seen to honour (SBATCH_ACCOUNT, SBATCH_CLUSTER_CONSTRAINT, ...).
_TABLE = """
accel-bind||r|string|r|
account|A|r|string|bra|*:ACCOUNT
acctg-freq||r|acctg_freq|bra|*:ACCTG_FREQ
array|a|r|array|b|b:ARRAY_INX
batch||r|string|b|b:BATCH
bcast||o|string|r|r:BCAST
bcast-exclude||r|string|r|r:BCAST_EXCLUDE
begin|b|r|begin|bra|
bell||n|flag|a|a:BELL
bb||r|string|bra|r:BURST_BUFFER a:BURST_BUFFER
bbf||r|string|bra|
cluster-constraint||r|string|bra|b:CLUSTER_CONSTRAINT
chdir|D|r|string|bra|r:WORKING_DIR
cluster||r|string|bra||=clusters
clusters|M|r|string|bra|*:CLUSTERS
comment||r|string|bra|
compress||o|string|r|r:COMPRESS
container||r|string|bra|b:CONTAINER a:CONTAINER r=SRUN_CONTAINER
context||r|string|bra|
contiguous||n|flag|bra|
constraint|C|r|string|bra|*:CONSTRAINT
core-spec|S|r|nonnegative_int|bra|*:CORE_SPEC
cores-per-socket||r|positive_int|bra|
cpu-bind||r|cpu_bind|r|r:CPU_BIND
cpu_bind||r|cpu_bind|r||==cpu-bind
cpu-freq||r|cpu_freq|bra|r:CPU_FREQ_REQ
cpus-per-gpu||r|positive_int|bra|*:CPUS_PER_GPU
cpus-per-task|c|r|positive_int|bra|r=SRUN_CPUS_PER_TASK
deadline||r|begin|bra|
debugger-test||n|flag|r|
delay-boot||r|time|bra|*:DELAY_BOOT
dependency|d|r|dependency|bra|r:DEPENDENCY
disable-status|X|n|flag|r|r:DISABLE_STATUS
distribution|m|r|distribution|bra|*:DISTRIBUTION
epilog||r|string|r|r:EPILOG
error|e|r|string|br|b:ERROR r:STDERRMODE
exact||n|flag|r|r:EXACT
exclude|x|r|hostlist|bra|
exclusive||o|exclusive|bra|*:EXCLUSIVE
export||r|export|br|b:EXPORT r:EXPORT_ENV r=SRUN_EXPORT_ENV
export-file||r|string|b|
extra-node-info|B|r|string|bra|
get-user-env||o|get_user_env|ba|b:GET_USER_ENV
gid||r|string|bra|
gpu-bind||r|gpu_bind|bra|*:GPU_BIND
gpu-freq||r|gpu_freq|bra|*:GPU_FREQ
gpus|G|r|gpus|bra|*:GPUS
gpus-per-node||r|string|bra|*:GPUS_PER_NODE
gpus-per-socket||r|string|bra|b:GPUS_PER_SOCKET
gpus-per-task||r|string|bra|*:GPUS_PER_TASK
gres||r|gres|bra|*:GRES
gres-flags||r|gres_flags|bra|*:GRES_FLAGS
help|h|n|flag|bra|
het-group||r|string|r|
hint||r|hint|bra|*:HINT
hold|H|n|flag|bra|
ignore-pbs||n|flag|b|b:IGNORE_PBS
immediate|I|o|string|ra|r:IMMEDIATE a:IMMEDIATE
input|i|r|string|br|b:INPUT r:STDINMODE
interactive||n|flag|r|
jobid||r|positive_int|r|r:JOB_ID
job-name|J|r|string|bra|b:JOB_NAME r:JOB_NAME
kill-command|K|o|string|a|a:KILL_CMD
kill-on-bad-exit|K|o|string|r|r:KILL_BAD_EXIT
kill-on-invalid-dep||r|yes_no|b|
label|l|n|flag|r|r:LABELIO
licenses|L|r|string|bra|
mail-type||r|mail_type|bra|
mail-user||r|string|bra|
mcs-label||r|string|bra|
mem||r|memory|bra|*:MEM_PER_NODE
mem-bind||r|mem_bind|bra|*:MEM_BIND
mem-per-cpu||r|memory|bra|*:MEM_PER_CPU
mem-per-gpu||r|memory|bra|*:MEM_PER_GPU
mincpus||r|positive_int|bra|
mpi||r|string|r|r:MPI_TYPE
msg-timeout||r|positive_int|r|
multi-prog||n|flag|r|
network||r|string|bra|*:NETWORK
nice||o|nice|bra|
no-allocate|Z|n|flag|r|
no-bell||n|flag|a|a:NO_BELL
no-kill|k|o|no_kill|bra|*:NO_KILL
no-requeue||n|flag|b|b:NO_REQUEUE
no-shell||n|flag|a|
nodefile|F|r|nodefile|ba|
nodefile||r|nodefile|r|
nodelist|w|r|hostlist|bra|
nodes|N|r|nodes|bra|r:NNODES r:JOB_NUM_NODES
ntasks|n|r|positive_int|bra|r:NTASKS r:NPROCS
ntasks-per-core||r|positive_int|bra|r:NTASKS_PER_CORE
ntasks-per-gpu||r|positive_int|bra|r:NTASKS_PER_GPU
ntasks-per-node||r|positive_int|bra|r:NTASKS_PER_NODE
ntasks-per-socket||r|positive_int|bra|r:NTASKS_PER_SOCKET
ntasks-per-tres||r|positive_int|bra||=ntasks-per-gpu
open-mode||r|open_mode|br|b:OPEN_MODE r:OPEN_MODE
output|o|r|string|br|b:OUTPUT r:STDOUTMODE
overcommit|O|n|flag|bra|*:OVERCOMMIT
overlap||n|flag|r|r:OVERLAP
oversubscribe|s|n|flag|bra|
pack-group||r|string|r||=het-group
parsable||n|flag|b|
partition|p|r|string|bra|*:PARTITION
power||r|string|bra|*:POWER
prefer||r|string|bra|
preserve-env|E|n|flag|r|
priority||r|string|bra|
profile||r|profile|bra|*:PROFILE
prolog||r|string|r|r:PROLOG
propagate||o|string|br|
pty||n|flag|r|
qos|q|r|string|bra|*:QOS
quiet|Q|n|flag|bra|
quit-on-interrupt||n|flag|r|
reboot||n|flag|bra|
relative|r|r|nonnegative_int|r|
requeue||n|flag|b|b:REQUEUE
reservation||r|string|bra|*:RESERVATION
resv-ports||o|string|r|r:RESV_PORTS
send-libs||o|string|r|r:SEND_LIBS
signal||r|signal|bra|*:SIGNAL
slurmd-debug||r|string|r|
sockets-per-node||r|positive_int|bra|
spread-job||n|flag|bra|*:SPREAD_JOB
switches||r|switches|bra|
threads|T|r|positive_int|r|r:THREADS
task-epilog||r|string|r|r:TASK_EPILOG
task-prolog||r|string|r|r:TASK_PROLOG
tasks-per-node||r|positive_int|bra||=ntasks-per-node
test-only||n|flag|br|
thread-spec||r|nonnegative_int|bra|*:THREAD_SPEC
threads-per-core||r|positive_int|bra|*:THREADS_PER_CORE
time|t|r|time|bra|*:TIMELIMIT
time-min||r|time|bra|
tmp||r|memory|bra|
uid||r|string|bra|
unbuffered|u|n|flag|r|r:UNBUFFEREDIO
use-min-nodes||n|flag|bra|*:USE_MIN_NODES
usage||n|flag|bra|
verbose|v|n|flag|bra||=verbose+
version|V|n|flag|bra|
wait|W|n|flag|b|b:WAIT
wait|W|r|nonnegative_int|r|r:WAIT
wait-all-nodes||r|zero_one|ba|b:WAIT_ALL_NODES a:WAIT_ALL_NODES
wckey||r|string|bra|*:WCKEY
whole||n|flag|r|
wrap||r|string|b|
x11||o|string|ra|
"""

_ARG = {"n": "none", "r": "required", "o": "optional"}


def _build() -> list[Option]:
    rows: list[Option] = []
    for line in _TABLE.strip().splitlines():
        cols = line.split("|")
        name, short, arg, parser, cmds, env = cols[:6]
        key, accumulate, ident = name, False, name
        if len(cols) > 6 and cols[6].startswith("=="):
            key = ident = cols[6][2:]     # getopt-identical spelling (cpu_bind)
        elif len(cols) > 6 and cols[6].startswith("="):
            key = cols[6][1:]
            if key.endswith("+"):
                key, accumulate = key[:-1], True
        letters = set(cmds)
        envmap: dict[str, list[str]] = {}
        for tok in env.split():
            if "=" in tok:
                who, _, full = tok.partition("=")
                envmap.setdefault(_CMD_LETTER[who], []).append(full)
                continue
            who, _, suffix = tok.partition(":")
            for letter in (letters if who == "*" else {who}):
                envmap.setdefault(_CMD_LETTER[letter], []).append(_ENV_PREFIX[letter] + suffix)
        rows.append(Option(name, short or None, _ARG[arg], parser,
                           frozenset(_CMD_LETTER[c] for c in cmds),
                           {k: tuple(v) for k, v in envmap.items()}, key, accumulate, ident))
    return rows


ALL_OPTIONS: list[Option] = _build()
# name -> the row sbatch uses (or the only row); per-command rows: options_for(prog)
OPTIONS: dict[str, Option] = {}
for _o in ALL_OPTIONS:
    if _o.name not in OPTIONS or "sbatch" in _o.commands:
        OPTIONS[_o.name] = _o
del _o

# Input variables that do not map one-to-one onto an option (sbatch man page, INPUT
# ENVIRONMENT VARIABLES): SBATCH_DEBUG counts as -v; SBATCH_REQ_SWITCH and
# SBATCH_WAIT4SWITCH are the two halves of --switches.
EXTRA_ENV = {
    "sbatch": {"SBATCH_DEBUG": "verbose", "SBATCH_REQ_SWITCH": "switches",
               "SBATCH_WAIT4SWITCH": "switches@"},
    "salloc": {"SALLOC_DEBUG": "verbose", "SALLOC_REQ_SWITCH": "switches",
               "SALLOC_WAIT4SWITCH": "switches@"},
    "srun": {"SLURM_REQ_SWITCH": "switches", "SLURM_WAIT4SWITCH": "switches@"},
}

_BY_PROG: dict[str, tuple[dict[str, Option], dict[str, Option]]] = {}


def options_for(prog: str) -> tuple[dict[str, Option], dict[str, Option]]:
    """(long name -> Option, short letter -> Option) for one command."""
    got = _BY_PROG.get(prog)
    if got is None:
        longs = {o.name: o for o in ALL_OPTIONS if prog in o.commands}
        shorts = {o.short: o for o in longs.values() if o.short}
        got = _BY_PROG[prog] = (longs, shorts)
    return got


def env_inputs(prog: str) -> Iterator[tuple[str, Option]]:
    """(variable name, option) for every input environment variable of ``prog``."""
    for opt in options_for(prog)[0].values():
        for var in opt.env.get(prog, ()):
            yield var, opt


# The ``parser`` kind of each row -> the function that parses its value.
PARSERS: dict[str, Callable[..., Any]] = {
    "string": values.parse_string, "flag": values.parse_flag, "time": values.parse_time,
    "memory": values.parse_memory, "nodes": values.parse_nodes, "array": structvalues.parse_array,
    "dependency": structvalues.parse_dependency, "signal": structvalues.parse_signal,
    "export": structvalues.parse_export, "gres": structvalues.parse_gres,
    "gpus": structvalues.parse_gpus, "mail_type": structvalues.parse_mail_type,
    "begin": structvalues.parse_begin, "exclusive": values.parse_exclusive,
    "open_mode": values.parse_open_mode, "distribution": values.parse_distribution,
    "constraint": values.parse_constraint, "hostlist": structvalues.parse_hostlist,
    "nodefile": structvalues.parse_nodefile,
    "nice": values.parse_nice, "positive_int": values.parse_positive_int,
    "nonnegative_int": values.parse_nonnegative_int, "loose_int": values.parse_loose_int,
    "yes_no": values.parse_yes_no, "zero_one": values.parse_zero_one,
    "no_kill": values.parse_no_kill, "gres_flags": values.parse_gres_flags,
    "hint": values.parse_hint, "profile": values.parse_profile,
    "acctg_freq": values.parse_acctg_freq, "cpu_freq": values.parse_cpu_freq,
    "mem_bind": values.parse_mem_bind, "cpu_bind": values.parse_cpu_bind, "gpu_bind": values.parse_gpu_bind,
    "gpu_freq": values.parse_gpu_freq,
    "get_user_env": parse_get_user_env,  # [timeout][L|S] (grammar/getuserenv.py)
    "switches": values.parse_switches,
}
