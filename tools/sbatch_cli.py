"""Front ends of sbatch and srun over the shared option table: ``parse_sbatch``,
``parse_srun`` and ``parse_salloc`` (the ``sbatch -v`` "defined options" block is
``sbatch_verbose``'s).

Order of work, as sbatch does it (observed with sbatch 22.05.8):

1. the command line is read once with getopt_long rules (errors -> status 255); --help,
   --usage and --version answer at once;
2. the script is found (file, --wrap, or standard input) and checked (status 1);
3. its ``#SBATCH`` directives are applied, then ``SBATCH_*`` input variables, then the
   command-line options: the last value wins, so the command line beats the environment,
   which beats the script;
4. every value is parsed when it is applied -- a bad value in the script is reported even
   when the command line overrides it -- and combinations are checked at the end;
5. errors that real Slurm only reports once the controller answers (bad --array or
   --dependency syntax: "Batch job submission failed: ...") are raised last.

``argv`` excludes the program name (``sys.argv[1:]``).
"""
from __future__ import annotations

from plurm.grammar.lazyre import re

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only (start-up cost)
    from typing import Any, Iterable, Mapping

from plurm.grammar import structvalues as S, values as V
from plurm.grammar.options import (EXTRA_ENV, PARSERS, Option, OptionError, OptionValueError, env_inputs,
                                   options_for)
from plurm.tools.sbatch_checks import _validate
from plurm.tools.frontend import Parsed, getopt, help_text, iter_getopt, usage_text, version_text
from plurm.grammar.script import (Directive, ScriptInfo, UnmatchedQuote, check_script, read_script,
                     translate_pbs)

__all__ = ["SbatchRequest", "SrunRequest", "parse_sbatch", "parse_srun", "parse_salloc",
           "help_text", "usage_text", "version_text", "normalized"]

WRAP_HEADER = "#!/bin/sh\n# This script was created by sbatch --wrap.\n\n"
_INFO_OPTS = ("help", "usage", "version")


class SbatchRequest:
    """What sbatch was asked to do.  ``options`` maps option keys (as sbatch spells them,
    e.g. "cpus-per-task") to typed values after precedence; ``raw_options`` holds the same
    keys with the strings as given (True for flags).  Hetjobs: one dict per component in
    ``components``/``raw_components``; ``options`` is component 0."""

    def __init__(self, options: dict[str, Any], script_path: str | None, script_text: str,
                 script_args: list[str], warnings: list[str] | None = None,
                 directives: list[dict[str, Any]] | None = None, verbose: int = 0,
                 raw_options: dict[str, Any] | None = None,
                 components: list[dict[str, Any]] | None = None,
                 raw_components: list[dict[str, Any]] | None = None,
                 script_info: ScriptInfo | None = None,
                 pbs_translated: list[dict[str, Any]] | None = None) -> None:
        self.options = options
        self.script_path = script_path
        self.script_text = script_text
        self.script_args = script_args
        self.warnings = warnings if warnings is not None else []
        self.directives = directives if directives is not None else []
        self.verbose = verbose
        self.raw_options = raw_options if raw_options is not None else {}
        self.components = components if components is not None else [options]
        self.raw_components = raw_components if raw_components is not None \
            else [self.raw_options]
        self.script_info = script_info
        self.pbs_translated = pbs_translated if pbs_translated is not None else []

    def __repr__(self) -> str:
        return (f"SbatchRequest(options={self.options!r}, script_path={self.script_path!r}, "
                f"script_args={self.script_args!r})")


class SrunRequest:
    """srun's options (typed, after precedence) and the command to run; ``components`` and
    ``commands`` list each part of ``srun A : B``."""

    def __init__(self, options: dict[str, Any], command: list[str],
                 warnings: list[str] | None = None, verbose: int = 0,
                 raw_options: dict[str, Any] | None = None,
                 components: list[dict[str, Any]] | None = None,
                 commands: list[list[str]] | None = None) -> None:
        self.options = options
        self.command = command
        self.warnings = warnings if warnings is not None else []
        self.verbose = verbose
        self.raw_options = raw_options if raw_options is not None else {}
        self.components = components if components is not None else [options]
        self.commands = commands if commands is not None else [command]
        self.raw_components: list[dict[str, Any]] = [self.raw_options]
        # the option keys the command line itself gave (not the environment)
        self.cmdline_keys: set[str] = set()

    def __repr__(self) -> str:
        return f"SrunRequest(options={self.options!r}, command={self.command!r})"


# ------------------------------------------------------------------------- value handling
class _State:
    """One component's options: raw (as given) and typed, last value wins."""

    def __init__(self, prog: str, max_array_size: int = S.MAX_ARRAY_SIZE) -> None:
        self.prog = prog
        self.max_array_size = max_array_size
        self.raw: dict[str, Any] = {}
        self.typed: dict[str, Any] = {}
        # errors reported after every option is read ("validate": GRES, --hint) or as the
        # controller's answer ("submit": --array, --dependency, host lists), per option: a
        # later good value of the same option replaces the bad one, as in sbatch
        self.late: dict[str, OptionError] = {}
        self.deferred: dict[str, OptionError] = {}
        self.verbose = 0
        self.from_env: set[str] = set()     # memory options that came from the environment

    def copy(self) -> "_State":
        s = _State(self.prog, self.max_array_size)
        s.raw, s.typed = dict(self.raw), dict(self.typed)
        s.late, s.deferred = dict(self.late), dict(self.deferred)
        return s

    def next_component(self) -> "_State":
        """The state a hetjob's next component starts from: this one's, less what describes
        one component's resources (sbatch 22.05.8 -v, tests/integration/reference/hetjob)."""
        s = self.copy()
        for key in _HET_RESET:
            for table in (s.raw, s.typed, s.late, s.deferred):
                table.pop(key, None)
        return s

    def apply(self, opt: Option, value: str | None) -> None:
        if opt.key in _MEM_KEYS and any(k in self.typed and k not in self.from_env
                                        for k in _MEM_KEYS if k != opt.key):
            # a second kind of memory request from the script or the command line
            raise OptionError([f"{self.prog}: fatal: --mem, --mem-per-cpu, and --mem-per-gpu "
                               "are mutually exclusive."], 1)
        if opt.accumulate:
            self.verbose += 1
            self.raw[opt.key] = self.typed[opt.key] = self.verbose
            return
        self.late.pop(opt.key, None)
        self.deferred.pop(opt.key, None)
        try:
            typed = _parse_value(self.prog, opt, value, self.max_array_size)
        except OptionValueError as exc:
            if exc.stage == "value":
                raise exc.for_prog(self.prog) from None
            (self.late if exc.stage == "validate" else self.deferred)[opt.key] = \
                exc.for_prog(self.prog)
            typed = None
        if opt.parser == "hostlist" and value and "/" in value:
            value = S.read_hostfile(value)    # sbatch -v shows the file's names
        if opt.key == "mail-type" and typed is not None and self.typed.get("mail-type"):
            typed = S.merge_mail_type(self.typed["mail-type"], typed)   # repeats add up
            value = ",".join(typed["types"]) or "NONE"
        self.raw[opt.key] = True if value is None else value
        self.typed[opt.key] = typed


def _parse_value(prog: str, opt: Option, value: str | None,
                 max_array_size: int = S.MAX_ARRAY_SIZE) -> Any:
    if opt.arg == "none":
        return True
    if value is None and opt.parser not in ("nice", "exclusive", "no_kill"):
        return True     # optional argument not given (--propagate, -I, -K, --no-kill)
    if opt.parser == "array":    # MaxArraySize is the site's (slurm.conf)
        return S.parse_array(value, opt.name, max_array_size)  # type: ignore[arg-type]
    return PARSERS[opt.parser](value, opt.name)


def _env_true(value: str) -> bool:
    """How sbatch reads a flag from its environment (observed): "", "yes" or a whole
    non-zero number turns it on; "0", "no", "true", "x", "1-2" do not."""
    n, rest = V._strtol(value)
    return value == "" or value.lower() == "yes" or (bool(n) and not rest)


_MEM_KEYS = ("mem", "mem-per-cpu", "mem-per-gpu")
# What a hetjob component does not inherit from the one before it: observed with sbatch
# 22.05.8 -v (t4/t5 in tests/integration/reference/hetjob/); the last line's keys are their
# likes, not observed.  The rest (account, job-name, time, output, mem, qos, ...) carry over.
_HET_RESET = frozenset({
    "contiguous", "constraint", "cpus-per-task", "exclusive", "oversubscribe", "gpus-per-node", "gres",
    "licenses", "mail-type", "mail-user", "mincpus", "nodelist", "nodes", "ntasks", "ntasks-per-node",
    "partition", "tmp", "cores-per-socket", "cpu-freq", "cpus-per-gpu", "distribution", "gpu-bind", "gpus",
    "gpus-per-task", "gres-flags", "mem-bind", "mem-per-cpu", "ntasks-per-core", "ntasks-per-socket",
    "overcommit", "sockets-per-node", "spread-job", "switches", "thread-spec", "threads-per-core",
    "use-min-nodes",
    "tasks-per-node", "ntasks-per-gpu", "mem-per-gpu", "gpus-per-socket", "core-spec", "hint", "cpu-bind",
    "extra-node-info", "prefer", "cluster-constraint"})


def _debug_level(state: _State, value: str) -> None:
    """SBATCH_DEBUG sets the verbosity, whatever the command line's -v said (observed with
    22.05.8: SBATCH_DEBUG=1 with -vv is 1, =3 with -v is 3; a value that is no number is
    0, and then -v prints no options block)."""
    m = re.match(r"\s*([+-]?\d+)", value)
    state.verbose = max(int(m.group(1)), 0) if m else 0
    if state.verbose:
        state.raw["verbose"] = state.typed["verbose"] = state.verbose
    else:
        state.raw.pop("verbose", None)
        state.typed.pop("verbose", None)


def _apply_env(state: _State, prog: str, env: Mapping[str, str]) -> None:
    # the memory variables (observed with sbatch 22.05.8): two of them are fatal; one is
    # ignored when the script already asked for memory, and yields to a command-line one
    mem_vars = [var for var, opt in env_inputs(prog) if opt.key in _MEM_KEYS and var in env]
    if len(mem_vars) > 1:
        raise OptionError([f"{prog}: fatal: SLURM_MEM_PER_CPU, SLURM_MEM_PER_GPU, and "
                           "SLURM_MEM_PER_NODE are mutually exclusive."], 1)
    for var, opt in env_inputs(prog):
        if var == "SLURM_NNODES" and not (env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")):
            # outside an allocation 22.05's srun ignores it (checked: SLURM_NNODES=3 runs on
            # one node, SLURM_NNODES=abc is no error); inside one it is the allocation's
            continue
        if opt.key in _MEM_KEYS and var in env:
            if any(k in state.typed for k in _MEM_KEYS):
                try:
                    _parse_value(prog, opt, env[var])   # still checked, then ignored
                except OptionValueError as exc:
                    raise exc.for_prog(prog) from None
                continue
            state.from_env.add(opt.key)
        if var in env:
            if opt.arg == "none":
                if _env_true(env[var]):     # a flag: "yes" or a non-zero number sets it
                    state.apply(opt, None)
            else:
                state.apply(opt, env[var])
    extra = EXTRA_ENV.get(prog, {})
    for var, target in extra.items():
        if var not in env:
            continue
        if target == "verbose":
            try:
                n = int(env[var])
            except ValueError:
                n = 0
            for _ in range(max(n, 0)):
                state.apply(options_for(prog)[0]["verbose"], None)
        elif target == "switches":
            state.raw["switches"] = state.typed["switches"] = env[var]
        elif target == "switches@":
            cur = str(state.raw.get("switches", "")).partition("@")[0] or "1"
            state.raw["switches"] = state.typed["switches"] = f"{cur}@{env[var]}"


def _info_request(key: str, verbose: int) -> SbatchRequest:
    return SbatchRequest(options={key: True}, script_path=None, script_text="",
                         script_args=[], verbose=verbose, raw_options={key: True})


# ------------------------------------------------------------------------------- sbatch
def parse_sbatch(argv: list[str], env: Mapping[str, str], stdin_bytes: bytes | None = None,
                 *, max_array_size: int = S.MAX_ARRAY_SIZE,
                 gres_types: Iterable[str] | None = None) -> SbatchRequest:
    """``max_array_size`` and ``gres_types`` come from the site's slurm.conf (MaxArraySize,
    GresTypes; "gpu" is always known); without ``gres_types`` GRES names are not checked."""
    prog = "sbatch"
    # like sbatch's first pass: each command-line option is applied as soon as getopt hands
    # it over, so a bad value is reported before a later bad option, and --help answers
    # without looking further
    scratch = _State(prog, max_array_size)
    groups: list[list[Parsed]] = []
    rest = list(argv)
    while True:
        parsed: list[Parsed] = []
        it = iter_getopt(prog, rest)
        while True:
            try:
                p = next(it)
            except StopIteration as stop:
                rest = stop.value
                break
            if p.option.name in _INFO_OPTS:
                return _info_request(p.option.name, scratch.verbose)
            scratch.apply(p.option, p.value)
            parsed.append(p)
        groups.append(parsed)
        if rest and rest[0] == ":":     # the next heterogeneous component
            rest = rest[1:]
            continue
        break

    cmd_wrap = None
    for p in (p for group in groups for p in group):  # (--wrap after a `:` wraps as well: 22.05.8)
        if p.option.name == "wrap":
            cmd_wrap = p.value
    script_path: str | None = None
    script_args: list[str] = []
    info: ScriptInfo | None = None
    if cmd_wrap is not None:
        if rest:
            raise OptionError([f"{prog}: error: Script arguments not permitted with --wrap "
                               "option"], 1)
        script_text = WRAP_HEADER + cmd_wrap + "\n"
    else:
        if rest:
            script_path, script_args = rest[0], rest[1:]
            try:
                with open(script_path, "rb") as handle:
                    data = handle.read()
            except OSError:
                raise OptionError([f"{prog}: error: Unable to open file {script_path}"],
                                  1) from None
        else:
            data = stdin_bytes or b""
        script_text = check_script(data, prog)
        try:
            info = read_script(script_text)
        except UnmatchedQuote as exc:
            where = script_path or "(stdin)"
            raise OptionError([f"{prog}: fatal: {where}: line {exc.line_no}: Unmatched "
                               f"`{exc.quote}` in [{exc.text}]"], 1) from None

    # script directives, one component after another (each inherits the previous one)
    states = [_State(prog, max_array_size)]
    directives_out: list[dict[str, Any]] = []
    pbs_out: list[dict[str, Any]] = []
    if info is not None:
        _apply_directives(prog, info, states, directives_out)
        ignore = ("ignore-pbs" in states[0].raw or _env_true(env.get("SBATCH_IGNORE_PBS", "0"))
                  or any(p.option.name == "ignore-pbs" for g in groups for p in g))
        if info.pbs and not ignore:
            _apply_pbs(prog, info, states, pbs_out)
    # one component per command-line group, too
    while len(states) < len(groups):
        states.append(states[-1].next_component())
    for i, st in enumerate(states):
        _apply_env(st, prog, env)
        # one command-line group applies to every component; several pair up with them
        for p in (groups[0] if len(groups) == 1 else groups[i] if i < len(groups) else []):
            if p.option.key in _MEM_KEYS:
                for k in st.from_env - {p.option.key}:   # the environment's memory yields
                    st.raw.pop(k, None)
                    st.typed.pop(k, None)
                st.from_env.clear()
            st.apply(p.option, p.value)
        if "SBATCH_DEBUG" in env:
            _debug_level(st, env["SBATCH_DEBUG"])
    warnings: list[str] = []
    known = None if gres_types is None else set(gres_types) | {"gpu"}
    for st in states:
        _validate(prog, st, warnings, known)
    verbose = states[0].verbose
    req = SbatchRequest(
        options=states[0].typed, script_path=script_path, script_text=script_text,
        script_args=script_args, warnings=warnings, directives=directives_out,
        verbose=verbose, raw_options=states[0].raw,
        components=[s.typed for s in states], raw_components=[s.raw for s in states],
        script_info=info, pbs_translated=pbs_out)
    for st in states:
        for err in st.deferred.values():
            # the controller's refusal: sbatch has printed -v's block by then, and
            # --test-only words it "allocation failure: ..." (sbatch.py reads .request)
            err.request = req  # type: ignore[attr-defined]
            raise err
    return req


def _apply_directives(prog: str, info: ScriptInfo, states: list[_State],
                      out: list[dict[str, Any]]) -> None:
    by_comp: dict[int, list[Directive]] = {}
    for d in info.directives:
        by_comp.setdefault(d.component, []).append(d)
    for comp in range(info.components):
        if comp > 0:
            states.append(states[-1].next_component())
        st = states[comp]
        words: list[str] = []
        line_of: list[Directive] = []
        for d in by_comp.get(comp, []):
            words += d.tokens
            line_of += [d] * len(d.tokens)
        it = iter_getopt(prog, words)
        while True:
            try:
                p = next(it)
            except StopIteration as stop:
                if stop.value:
                    raise OptionError([f"{prog}: error: Invalid directive found in batch "
                                       f"script: {stop.value[0]}"], 255) from None
                break
            d = line_of[p.index]     # the directive the option's first word came from
            if not p.option.accumulate:     # -v in a script does not raise verbosity
                st.apply(p.option, p.value)
            rec: dict[str, Any] = {"line": d.line, "option": p.option.name,
                                   "value": True if p.value is None else p.value,
                                   "given": " ".join(p.given)}
            if d.magic != "#SBATCH":
                rec["magic"] = d.magic
            if info.components > 1:
                rec["component"] = comp
            typed = st.typed.get(p.option.key)
            if p.option.key == "mail-type" and typed is not None:
                typed = S.parse_mail_type(p.value or "")   # this line's own events
            norm = normalized(p.option.key, typed, st.raw.get(p.option.key)) \
                if typed is not None or p.option.key in ("time", "time-min") else None
            if norm is not None:
                rec["normalized"] = norm
            out.append(rec)


def _apply_pbs(prog: str, info: ScriptInfo, states: list[_State],
               out: list[dict[str, Any]]) -> None:
    """#PBS lines go after every #SBATCH line (they override them), component 0."""
    longs = options_for(prog)[0]
    st = states[0]
    for d in info.pbs:
        for given, name, value in translate_pbs(d.tokens):
            opt = longs[name]
            st.apply(opt, None if opt.arg == "none" else value)
            out.append({"line": d.line, "given": given, "option": name,
                        "value": True if opt.arg == "none" else value})


# --------------------------------------------------------------------------------- srun
def parse_srun(argv: list[str], env: Mapping[str, str]) -> SrunRequest:
    """srun [options] command [args] [: [options] command [args]]...  Options stop at the
    first non-option word (getopt '+' ordering); SLURM_* input variables come under the
    command line."""
    prog = "srun"
    states: list[_State] = []
    commands: list[list[str]] = []
    cmdline_keys: set[str] = set()
    rest = list(argv)
    while True:
        st = _State(prog) if not states else states[-1].copy()
        if not states:
            _apply_env(st, prog, env)    # SLURM_* inputs sit under the command line
        it = iter_getopt(prog, rest)
        while True:
            try:
                p = next(it)
            except StopIteration as stop:
                rest = list(stop.value)
                break
            if p.option.name in _INFO_OPTS:
                return SrunRequest(options={p.option.name: True}, command=[])
            st.apply(p.option, p.value)
            if not states:
                cmdline_keys.add(p.option.key)
        cmd: list[str] = []
        while rest and rest[0] != ":":
            cmd.append(rest.pop(0))
        states.append(st)
        commands.append(cmd)
        if rest and rest[0] == ":":
            rest = rest[1:]
            continue
        break
    warnings: list[str] = []
    for st in states:
        _validate(prog, st, warnings)
        for err in st.deferred.values():
            raise err
    req = SrunRequest(options=states[0].typed, command=commands[0], warnings=warnings,
                      verbose=states[0].verbose, raw_options=states[0].raw,
                      components=[s.typed for s in states], commands=commands)
    req.raw_components = [s.raw for s in states]
    req.cmdline_keys = cmdline_keys
    return req


def parse_salloc(argv: list[str], env: Mapping[str, str]) -> SrunRequest:
    """salloc [options] [command [args]]: the same rules as srun, SALLOC_* variables."""
    prog = "salloc"
    parsed, rest = getopt(prog, list(argv))
    groups = [parsed]
    while rest and rest[0] == ":":  # `salloc A : B`: a heterogeneous job's components
        parsed, rest = getopt(prog, rest[1:])
        groups.append(parsed)
    for p in (p for group in groups for p in group):
        if p.option.name in _INFO_OPTS:
            return SrunRequest(options={p.option.name: True}, command=[])
    states: list[_State] = []
    warnings: list[str] = []
    for group in groups:
        if states:
            st = states[-1].next_component()
        else:
            st = _State(prog)
            _apply_env(st, prog, env)
        for p in group:
            st.apply(p.option, p.value)
        _validate(prog, st, warnings)
        for err in st.deferred.values():
            raise err
        states.append(st)
    st = states[0]
    req = SrunRequest(options=st.typed, command=rest, warnings=warnings, verbose=st.verbose,
                      raw_options=st.raw, components=[s.typed for s in states])
    req.raw_components = [s.raw for s in states]
    return req


# ---------------------------------------------------------------- corpus normalized forms
def normalized(key: str, typed: Any, raw: Any = None) -> dict[str, Any] | None:
    """The ``normalized`` form the acceptance corpus documents for an option, or None."""
    if key in ("time", "time-min"):
        return {"unlimited": True} if typed is None else {"minutes": typed}
    if key in ("mem", "mem-per-cpu", "mem-per-gpu", "tmp"):
        out: dict[str, Any] = {"megabytes": typed}
        if key == "mem" and typed == 0:
            out["all_memory_on_node"] = True
        return out
    if key == "nodes":
        return {"min": typed[0], "max": typed[1]}
    if key == "signal":
        return dict(typed)
    if key == "mail-type":
        out = {"types": typed["types"]}
        if typed["dropped"]:
            out["dropped"] = typed["dropped"]
        if typed["types"] == ["ARRAY_TASKS"]:
            out["note"] = "ARRAY_TASKS alone selects no event: no mail is sent"
        return out
    if key in ("exclusive", "open-mode"):
        return {"mode": typed}
    if key == "array":
        idx = typed["indices"]
        out = {"count": len(idx)}
        contiguous = idx == list(range(idx[0], idx[-1] + 1)) if idx else False
        if len(idx) > 64 and contiguous:
            out.update(first=idx[0], last=idx[-1])
        else:
            out["indices"] = idx
        if typed["max_running"] is not None:
            out["max_running"] = typed["max_running"]
        return out
    if key == "dependency":
        conds = []
        for c in typed["conditions"]:
            conds.append({"type": "singleton"} if c["type"] == "singleton"
                         else {"type": c["type"], "job_ids": c["job_ids"]})
        return {"combine": typed["combine"], "conditions": conds}
    if key == "export":
        return {"mode": typed["mode"], "names": typed["names"],
                "assignments": typed["assignments"]}
    if key == "gres":
        return {"requests": typed}
    if key == "constraint":
        out = {"expression": raw}
        if "," in str(raw):
            out["controller_reads_as"] = str(raw).replace(",", "&")
        return out
    if key in ("output", "error", "input"):
        import re
        return {"pattern": raw, "placeholders": re.findall(r"%\d*[AaJjNnstuxb%]", raw)}
    return None
