"""The command-line kit of the user commands: GNU ``getopt_long``, as glibc behaves.

Every user command (sbatch, srun, salloc, squeue, sinfo, scancel, sacct, sacctmgr,
scontrol, sprio, sshare) reads its command line here, because Slurm's commands all call
glibc's ``getopt_long`` and users see its rules and its words:

* options and operands may be mixed (argument permutation), unless the short-option
  string starts with ``+`` or ``POSIXLY_CORRECT`` is set: then the first operand ends
  the options (sbatch, srun, salloc, scontrol, sacctmgr);
* ``--`` ends the options; ``-`` alone is an operand;
* a long option may be abbreviated to a prefix that names one option, or several that
  are identical (same key, same argument kind); an exact name always wins;
* ``--name=value`` and ``--name value`` for a required argument, ``--name=value`` only
  for an optional one; short options cluster (``-vvh``), take ``-ovalue`` or ``-o value``,
  and an optional short argument is attached only (``-j12``);
* errors are glibc's lines, word for word, with the command's name in front: see
  ``OptionError``.

Behaviour only: written from glibc's documented and observed behaviour, no code of it.
Start-up budget: this module imports nothing (``os`` is loaded by the interpreter
itself), so that ``squeue`` pays only for compiling the table it parses against.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: `typing` costs milliseconds of every start-up
    from collections.abc import Generator, Hashable, Iterable, Mapping
    from typing import Any

__all__ = ["NO_ARGUMENT", "REQUIRED_ARGUMENT", "OPTIONAL_ARGUMENT", "OptionError", "Usage",
           "Parsed", "Table", "getopt_long", "getopt_or_usage", "iter_getopt", "try_help"]

NO_ARGUMENT, REQUIRED_ARGUMENT, OPTIONAL_ARGUMENT = 0, 1, 2


class OptionError(Exception):
    """A command-line error: ``message`` is the line glibc's getopt_long prints on
    stderr, ``prog: ...``, without the newline.  What follows it (Slurm's ``Try "prog
    --help" for more information``, the exit code) is the command's to choose."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Usage(Exception):
    """Print ``text`` to ``stream`` and exit with ``code`` (help, usage, version, errors)."""

    def __init__(self, text: str, code: int, stream: str = "stdout", usage: str = "") -> None:
        super().__init__(text)
        self.text = text
        self.code = code
        self.stream = stream
        # a usage text for stdout after an error on stderr: squeue and sprio print their
        # "Unrecognized option" line on stderr and the usage on stdout
        self.usage = usage

    def write(self) -> int:
        """Print the texts where they belong; the exit code."""
        import sys

        (sys.stdout if self.stream == "stdout" else sys.stderr).write(self.text)
        if self.usage:
            sys.stderr.flush()
            sys.stdout.write(self.usage)
        return self.code


def try_help(prog: str) -> str:
    """The line every Slurm command prints after a getopt error."""
    return f'Try "{prog} --help" for more information'


class Parsed:
    """One option as getopt_long returned it.

    ``key``: the key the table gave the option (a short option's key is its letter);
    ``value``: its argument, None for a flag or an optional argument not given;
    ``spelled``: the option's full name as glibc names it (``--job-name`` for ``--job``,
    ``-J``); ``index``: the position in argv of its first word; ``given``: the words it
    was read from (``["-N", "2"]``, ``["-vN2"]``; a flag inside a cluster: ``["-v"]``).
    """

    __slots__ = ("key", "value", "spelled", "index", "given")

    def __init__(self, key: Hashable, value: str | None, spelled: str, index: int,
                 given: list[str]) -> None:
        self.key = key
        self.value = value
        self.spelled = spelled
        self.index = index
        self.given = given

    def __repr__(self) -> str:
        return f"Parsed({self.key!r}, {self.value!r}, {self.spelled!r}, {self.index})"


class Table:
    """An option table: getopt's short-option string and the long options.

    ``shortopts``: ``x`` a flag, ``x:`` a required argument, ``x::`` an optional one
    (attached only); a leading ``+`` stops at the first operand.  ``longopts``: either a
    mapping name -> (key, has_arg) or an iterable of (name, key, has_arg), in the order
    of the command's C table (an ambiguity message lists candidates in that order);
    ``has_arg`` is NO_ARGUMENT, REQUIRED_ARGUMENT or OPTIONAL_ARGUMENT.  Two long options
    with the same key and has_arg are one option to abbreviation (``--clu`` for
    ``--cluster``/``--clusters``), as glibc compares ``val`` and ``has_arg``.
    """

    __slots__ = ("shorts", "longs", "in_order")

    def __init__(self, shortopts: str,
                 longopts: Mapping[str, tuple[Hashable, int]] | Iterable[tuple[str, Hashable, int]] = ()
                 ) -> None:
        self.in_order = shortopts.startswith("+")
        spec = shortopts[1:] if self.in_order else shortopts
        if spec.startswith(("-", ":")):
            raise ValueError(f"unsupported getopt mode: {shortopts!r}")
        self.shorts: dict[str, int] = {}
        i = 0
        while i < len(spec):
            ch = spec[i]
            if spec.startswith("::", i + 1):
                self.shorts[ch], i = OPTIONAL_ARGUMENT, i + 3
            elif spec.startswith(":", i + 1):
                self.shorts[ch], i = REQUIRED_ARGUMENT, i + 2
            else:
                self.shorts[ch], i = NO_ARGUMENT, i + 1
        # a name given twice keeps its first entry, as glibc's table scan finds it first
        self.longs: dict[str, tuple[Hashable, int]] = {}
        rows = ((n, k, a) for n, (k, a) in longopts.items()) if hasattr(longopts, "items") \
            else longopts
        for name, key, has_arg in rows:  # type: ignore[misc]
            self.longs.setdefault(name, (key, has_arg))

    def lookup(self, word: str) -> tuple[str, Hashable, int]:
        """The long option ``word`` (no dashes, no ``=value``) names: (name, key, has_arg).
        An exact name wins, else the prefix's first match when every other match is
        identical to it.  KeyError when none matches; LookupError(names) when ambiguous,
        with the first match and those differing from it, in table order."""
        got = self.longs.get(word)
        if got is not None:
            return word, got[0], got[1]
        first: tuple[str, Hashable, int] | None = None
        listed: list[str] = []
        for name, (key, has_arg) in self.longs.items():
            if not name.startswith(word):
                continue
            if first is None:
                first = (name, key, has_arg)
                listed.append(name)
            elif (key, has_arg) != (first[1], first[2]):
                listed.append(name)
        if first is None:
            raise KeyError(word)
        if len(listed) > 1:
            raise LookupError(listed)
        return first


def _stops_at_operand(table: Table, environ: Mapping[str, str] | None) -> bool:
    if table.in_order:
        return True
    env = os.environ if environ is None else environ
    return "POSIXLY_CORRECT" in env   # glibc: set at all, even empty


def iter_getopt(prog: str, argv: list[str], table: Table,
                environ: Mapping[str, str] | None = None
                ) -> Generator[Parsed, None, list[str]]:
    """Parse ``argv`` (without the program name) one option at a time, so that a caller
    can act on each (and fail) before a later word is looked at, as Slurm's loops do.
    The generator's return value is the operands.  Raises OptionError at the first bad
    word, scanning left to right."""
    in_order = _stops_at_operand(table, environ)
    shorts = table.shorts
    operands: list[str] = []
    n = len(argv)
    i = 0
    while i < n:
        arg = argv[i]
        if arg == "--":
            return operands + argv[i + 1:]
        if not arg.startswith("-") or arg == "-":
            if in_order:
                return operands + argv[i:]
            operands.append(arg)
            i += 1
            continue
        start = i
        i += 1
        if arg.startswith("--"):
            word, eq, value = arg[2:].partition("=")
            try:
                name, key, has_arg = table.lookup(word)
            except KeyError:
                raise OptionError(f"{prog}: unrecognized option '{arg}'") from None
            except LookupError as exc:
                poss = " ".join(f"'--{c}'" for c in exc.args[0])
                raise OptionError(f"{prog}: option '{arg}' is ambiguous; possibilities: {poss}"
                                  ) from None
            if eq:
                if has_arg == NO_ARGUMENT:
                    raise OptionError(f"{prog}: option '--{name}' doesn't allow an argument")
                yield Parsed(key, value, "--" + name, start, [arg])
            elif has_arg == REQUIRED_ARGUMENT:
                if i >= n:
                    raise OptionError(f"{prog}: option '--{name}' requires an argument")
                i += 1
                yield Parsed(key, argv[i - 1], "--" + name, start, [arg, argv[i - 1]])
            else:
                yield Parsed(key, None, "--" + name, start, [arg])
            continue
        # a cluster of short options: -vvN2
        j = 1
        while j < len(arg):
            ch = arg[j]
            j += 1
            kind = shorts.get(ch)
            if kind is None or ch in ":;":
                raise OptionError(f"{prog}: invalid option -- '{ch}'")
            if kind == NO_ARGUMENT:
                yield Parsed(ch, None, "-" + ch, start, [arg] if len(arg) == 2 else ["-" + ch])
                continue
            rest = arg[j:]
            if rest:
                yield Parsed(ch, rest, "-" + ch, start, [arg])
            elif kind == OPTIONAL_ARGUMENT:
                yield Parsed(ch, None, "-" + ch, start, [arg])
            elif i >= n:
                raise OptionError(f"{prog}: option requires an argument -- '{ch}'")
            else:
                i += 1
                yield Parsed(ch, argv[i - 1], "-" + ch, start, [arg, argv[i - 1]])
            break
    return operands


def parse(prog: str, argv: list[str], table: Table, environ: Mapping[str, str] | None = None
          ) -> tuple[list[Parsed], list[str]]:
    """The whole command line at once: (options in order, operands)."""
    return collect(iter_getopt(prog, argv, table, environ))


def collect(it: Generator[Any, None, list[str]]) -> tuple[list[Any], list[str]]:
    """Everything a one-option-at-a-time parser yields, and the words it returns."""
    out: list[Any] = []
    while True:
        try:
            out.append(next(it))
        except StopIteration as stop:
            return out, stop.value


def getopt_long(prog: str, argv: list[str], shortopts: str,
                longopts: Mapping[str, tuple[Hashable, int]] | Iterable[tuple[str, Hashable, int]] = (),
                environ: Mapping[str, str] | None = None
                ) -> tuple[list[tuple[Hashable, str | None]], list[str]]:
    """([(key, value)], operands) for a getopt short string and a long table (see
    Table); raises OptionError with glibc's line."""
    parsed, operands = parse(prog, argv, Table(shortopts, longopts), environ)
    return [(p.key, p.value) for p in parsed], operands


def getopt_or_usage(prog: str, argv: list[str], shortopts: str,
                    longopts: Mapping[str, tuple[Hashable, int]] | Iterable[tuple[str, Hashable, int]] = (),
                    code: int = 1) -> tuple[list[tuple[Hashable, str | None]], list[str]]:
    """getopt_long, with an error raised as Usage: glibc's line and Slurm's "Try" line on
    stderr, exit ``code`` (1 for squeue, sinfo, sprio, ...)."""
    try:
        return getopt_long(prog, argv, shortopts, longopts)
    except OptionError as exc:
        raise Usage(f"{exc.message}\n{try_help(prog)}\n", code, "stderr") from None
