"""Front ends of sbatch and srun over the shared option table: ``parse_sbatch``,
``parse_srun`` and the ``sbatch -v`` "defined options" block.

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

import os
from pathlib import Path
from typing import Any, Mapping

from . import values as V
from .options import (GetoptError, Option, OptionError, OptionValueError, Parsed, getopt,
                      options_for, env_inputs, EXTRA_ENV)
from .script import (Directive, ScriptInfo, UnmatchedQuote, check_script, read_script,
                     translate_pbs)

__all__ = ["SbatchRequest", "SrunRequest", "parse_sbatch", "parse_srun", "parse_salloc",
           "format_verbose_block", "help_text", "usage_text", "version_text", "normalized"]

_TEXTS = Path(__file__).resolve().parent / "texts"
WRAP_HEADER = "#!/bin/sh\n# This script was created by sbatch --wrap.\n\n"
_INFO_OPTS = ("help", "usage", "version")


def _text(name: str) -> str:
    return (_TEXTS / name).read_text(encoding="utf-8")


def help_text(prog: str = "sbatch") -> str:
    return _text(f"help_{prog}.txt")


def usage_text(prog: str = "sbatch") -> str:
    return _text(f"usage_{prog}.txt")


def version_text(prog: str = "sbatch") -> str:
    return _text("version_sbatch.txt")


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

    def __repr__(self) -> str:
        return f"SrunRequest(options={self.options!r}, command={self.command!r})"


# ------------------------------------------------------------------------- value handling
class _State:
    """One component's options: raw (as given) and typed, last value wins."""

    def __init__(self, prog: str) -> None:
        self.prog = prog
        self.raw: dict[str, Any] = {}
        self.typed: dict[str, Any] = {}
        self.deferred: list[OptionError] = []
        self.verbose = 0

    def copy(self) -> "_State":
        s = _State(self.prog)
        s.raw, s.typed = dict(self.raw), dict(self.typed)
        return s

    def apply(self, opt: Option, value: str | None) -> None:
        if opt.accumulate:
            self.verbose += 1
            self.raw[opt.key] = self.typed[opt.key] = self.verbose
            return
        typed = _parse_value(self.prog, opt, value, self.deferred)
        self.raw[opt.key] = True if value is None else value
        self.typed[opt.key] = typed


def _parse_value(prog: str, opt: Option, value: str | None,
                 deferred: list[OptionError]) -> Any:
    if opt.arg == "none":
        return True
    if value is None and opt.parser not in ("nice", "exclusive", "no_kill"):
        return True     # optional argument not given (--propagate, -I, -K, --no-kill)
    parser = V.PARSERS[opt.parser]
    try:
        return parser(value, opt.name)
    except OptionValueError as exc:
        err = exc.for_prog(prog)
        if exc.text.startswith("Batch job submission failed"):
            deferred.append(err)    # the controller's answer: reported after local checks
            return None
        raise err from None


def _apply_env(state: _State, prog: str, env: Mapping[str, str]) -> None:
    for var, opt in env_inputs(prog):
        if var in env:
            if opt.arg == "none" and opt.name != "get-user-env":
                state.apply(opt, None)      # a flag: any value sets it
            elif opt.arg == "none":
                state.raw[opt.key], state.typed[opt.key] = env[var], True
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


def _validate(prog: str, st: _State, warnings: list[str]) -> None:
    t = st.typed
    mems = [k for k in ("mem", "mem-per-cpu", "mem-per-gpu") if k in t]
    if len(mems) > 1:
        raise OptionError([f"{prog}: fatal: --mem, --mem-per-cpu, and --mem-per-gpu are "
                           "mutually exclusive."], 1)
    if "core-spec" in t and "thread-spec" in t:
        # (sic: Slurm's message spells it "thred")
        raise OptionError([f"{prog}: fatal: -S/--core-spec and --thred-spec options are "
                           "mutually exclusive"], 1)
    if "cpus-per-gpu" in t and "cpus-per-task" in t:
        raise OptionError([f"{prog}: error: --cpus-per-gpu is mutually exclusive with "
                           "--cpus-per-task",
                           f"{prog}: error: Invalid generic resource (gres) specification"], 1)
    # more nodes than tasks: sbatch lowers the node count (and says so when the minimum
    # itself is too high); sbatch -v shows the lowered value
    if "nodes" in t and isinstance(t.get("ntasks"), int):
        lo, hi = t["nodes"]
        n = t["ntasks"]
        if lo > n:
            warnings.append(f"{prog}: Warning: can't run {n} processes on {lo} nodes, "
                            f"setting nnodes to {n}")
            lo = hi = n
        elif hi > n:
            hi = n
        if [lo, hi] != t["nodes"]:
            t["nodes"] = [lo, hi]
            st.raw["nodes"] = _nodes_str(t["nodes"])
    if "chdir" in t and not os.path.isabs(t["chdir"]):
        t["chdir"] = _full_path(os.getcwd(), t["chdir"])


def _nodes_str(v: list[int]) -> str:
    return str(v[0]) if v[0] == v[1] else f"{v[0]}-{v[1]}"


def _split_components(args: list[str], prog: str
                      ) -> tuple[list[list[Parsed]], list[str]]:
    """Command-line options, separated by ':' into heterogeneous components."""
    groups: list[list[Parsed]] = []
    rest = args
    while True:
        parsed, rest = getopt(prog, rest)
        groups.append(parsed)
        if rest and rest[0] == ":":
            rest = rest[1:]
            continue
        return groups, rest


def _info_request(key: str, verbose: int) -> SbatchRequest:
    return SbatchRequest(options={key: True}, script_path=None, script_text="",
                         script_args=[], verbose=verbose, raw_options={key: True})


# ------------------------------------------------------------------------------- sbatch
def parse_sbatch(argv: list[str], env: Mapping[str, str], stdin_bytes: bytes | None = None,
                 *, max_array_size: int = V.MAX_ARRAY_SIZE) -> SbatchRequest:
    prog = "sbatch"
    groups, rest = _split_components(list(argv), prog)
    verbose = sum(1 for g in groups for p in g if p.option.key == "verbose")
    for g in groups:
        for p in g:
            if p.option.name in _INFO_OPTS:
                return _info_request(p.option.name, verbose)

    # like sbatch's first pass: command-line values are checked before the script is read
    scratch = _State(prog)
    for g in groups:
        for p in g:
            scratch.apply(p.option, p.value)

    cmd_wrap = None
    for p in groups[0]:
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
                data = Path(script_path).read_bytes()
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
    states = [_State(prog)]
    directives_out: list[dict[str, Any]] = []
    pbs_out: list[dict[str, Any]] = []
    if info is not None:
        _apply_directives(prog, info, states, directives_out)
        ignore = ("ignore-pbs" in states[0].raw or "SBATCH_IGNORE_PBS" in env
                  or any(p.option.name == "ignore-pbs" for g in groups for p in g))
        if info.pbs and not ignore:
            _apply_pbs(prog, info, states, pbs_out)
    # one component per command-line group, too
    while len(states) < len(groups):
        states.append(states[-1].copy())
    for i, st in enumerate(states):
        _apply_env(st, prog, env)
        # one command-line group applies to every component; several pair up with them
        for p in (groups[0] if len(groups) == 1 else groups[i] if i < len(groups) else []):
            st.apply(p.option, p.value)
    warnings: list[str] = []
    for st in states:
        _validate(prog, st, warnings)
    for st in states:
        if st.deferred:
            raise st.deferred[0]
    array = states[0].typed.get("array")
    if array and array.get("indices") and array["indices"][-1] >= max_array_size:
        raise OptionError([f"{prog}: error: Batch job submission failed: Invalid job array "
                           "specification"], 1)
    verbose = states[0].verbose
    return SbatchRequest(
        options=states[0].typed, script_path=script_path, script_text=script_text,
        script_args=script_args, warnings=warnings, directives=directives_out,
        verbose=verbose, raw_options=states[0].raw,
        components=[s.typed for s in states], raw_components=[s.raw for s in states],
        script_info=info, pbs_translated=pbs_out)


def _apply_directives(prog: str, info: ScriptInfo, states: list[_State],
                      out: list[dict[str, Any]]) -> None:
    by_comp: dict[int, list[Directive]] = {}
    for d in info.directives:
        by_comp.setdefault(d.component, []).append(d)
    for comp in range(info.components):
        if comp > 0:
            states.append(states[-1].copy())
        st = states[comp]
        words: list[str] = []
        line_of: list[Directive] = []
        for d in by_comp.get(comp, []):
            words += d.tokens
            line_of += [d] * len(d.tokens)
        parsed, rest = getopt(prog, words)
        if rest:
            raise OptionError([f"{prog}: error: Invalid directive found in batch script: "
                               f"{rest[0]}"], 255)
        pos = 0
        for p in parsed:
            # find the directive the first consumed word came from
            while pos < len(words) and words[pos] != p.given[0]:
                pos += 1
            d = line_of[pos] if pos < len(line_of) else line_of[-1]
            pos += len(p.given)
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
    rest = list(argv)
    while True:
        parsed, rest = getopt(prog, rest)
        for p in parsed:
            if p.option.name in _INFO_OPTS:
                return SrunRequest(options={p.option.name: True}, command=[])
        st = _State(prog) if not states else states[-1].copy()
        _apply_env(st, prog, env) if not states else None
        for p in parsed:
            st.apply(p.option, p.value)
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
        if st.deferred:
            raise st.deferred[0]
    req = SrunRequest(options=states[0].typed, command=commands[0], warnings=warnings,
                      verbose=states[0].verbose, raw_options=states[0].raw,
                      components=[s.typed for s in states], commands=commands)
    req.raw_components = [s.raw for s in states]
    return req


def parse_salloc(argv: list[str], env: Mapping[str, str]) -> SrunRequest:
    """salloc [options] [command [args]]: the same rules as srun, SALLOC_* variables."""
    prog = "salloc"
    parsed, rest = getopt(prog, list(argv))
    for p in parsed:
        if p.option.name in _INFO_OPTS:
            return SrunRequest(options={p.option.name: True}, command=[])
    st = _State(prog)
    _apply_env(st, prog, env)
    for p in parsed:
        st.apply(p.option, p.value)
    warnings: list[str] = []
    _validate(prog, st, warnings)
    if st.deferred:
        raise st.deferred[0]
    return SrunRequest(options=st.typed, command=rest, warnings=warnings, verbose=st.verbose,
                       raw_options=st.raw)


# ------------------------------------------------------------------------- sbatch -v text
_MAIL_PRINT_ORDER = ("ARRAY_TASKS", "INVALID_DEPEND", "BEGIN", "END", "FAIL", "REQUEUE",
                     "STAGE_OUT", "TIME_LIMIT", "TIME_LIMIT_90", "TIME_LIMIT_80",
                     "TIME_LIMIT_50")
_PROFILE_ORDER = ("Energy", "Lustre", "Network", "Task")
_CPU_FREQ_WORDS = {w.lower(): w for w in ("Low", "Medium", "High", "HighM1", "Conservative",
                                          "OnDemand", "Performance", "PowerSave",
                                          "UserSpace", "SchedUtil")}


def _profile_str(raw: str) -> str:
    words = {w.strip().lower() for w in raw.split(",")}
    if "none" in words:
        return "None"
    if "all" in words:
        return ",".join(_PROFILE_ORDER)
    return ",".join(p for p in _PROFILE_ORDER if p.lower() in words) or raw


def _full_path(base: str, path: str) -> str:
    # sbatch joins without normalising ("/cwd/./runs/conv/x.out")
    return path if path.startswith("/") else f"{base}/{path}"


def _display(key: str, raw: Any, typed: Any, opts: dict[str, Any] | None = None) -> str:
    """The value as ``sbatch -v`` prints it (formats observed with sbatch 22.05.8)."""
    opts = opts or {}
    if key in ("time", "time-min", "delay-boot"):
        return V.minutes_to_str(typed)
    if key in ("output", "error", "input"):
        return _full_path(opts.get("chdir") or os.getcwd(), str(raw))
    if key == "profile":
        return _profile_str(str(raw))
    if key == "cpu-freq":
        return "-".join(_CPU_FREQ_WORDS.get(p.lower(), p) for p in str(raw).split("-"))
    if key == "power":
        return str(raw).upper()
    if key == "propagate":
        return "ALL" if raw is True else str(raw)
    if key == "no-kill":
        return "unset" if str(raw).lower() == "off" else "set"
    if key == "oversubscribe":
        return "oversubscribe"
    if key == "get-user-env":
        return "0" if raw is True else str(raw)
    if key == "extra-node-info":
        return ":".join(f for f in str(raw).split(":") if f != "*")
    if key == "switches":
        count, at, wait = str(raw).partition("@")
        if not at:
            return count
        try:
            return f"{count}@{V.minutes_to_str(V.parse_time(wait, 'switches'))}"
        except V.OptionError:
            return str(raw)
    if key in ("mem", "mem-per-cpu", "mem-per-gpu", "tmp"):
        return V.mbytes_to_str(typed)
    if key == "nodes":
        return _nodes_str(typed)
    if key == "gres":
        return ",".join("gres:" + g for g in str(raw).split(",")) if raw else ""
    if key == "open-mode":
        return typed[:1]
    if key == "exclusive":
        return typed
    if key == "mail-type":
        return ",".join(t for t in _MAIL_PRINT_ORDER if t in typed["types"]) or "NONE"
    if key in ("begin", "deadline"):
        return V.time_to_iso(typed)
    if key == "signal":
        flags = ("R" if typed["on_reservation_end"] else "") + \
                ("B" if typed["batch_shell_only"] else "")
        s = (flags + ":" if flags else "") + typed["signal"]
        return s if "@" not in str(raw) else f"{s}@{typed['warn_seconds']}"
    if key == "chdir":
        return typed
    if key == "requeue":
        return "requeue"
    if key == "no-requeue":
        return "no-requeue"
    if key == "verbose":
        return str(typed)
    if raw is True:
        return "set"
    return str(raw)


def format_verbose_block(req: SbatchRequest | SrunRequest, prog: str = "sbatch") -> str:
    """The "defined options" block ``sbatch -v`` (or ``srun -v``/``salloc -v`` with that
    ``prog``) prints, one per component."""
    blocks = []
    comps = req.raw_components or [req.raw_options]
    typed_comps = req.components or [req.options]
    for raw, typed in zip(comps, typed_comps):
        lines = [f"{prog}: defined options", f"{prog}: {'-' * 20} {'-' * 20}"]
        for key in sorted(raw):
            shown = _display(key, raw[key], typed.get(key), typed)
            lines.append(f"{prog}: {key:<20}: {shown}")
        lines += [f"{prog}: {'-' * 20} {'-' * 20}", f"{prog}: end of defined options"]
        blocks.append("\n".join(lines) + "\n")
    return "".join(blocks)


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
