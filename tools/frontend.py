"""What sbatch, srun and salloc do alike before submitting: read the command line against
the shared option table, then parse, or answer and exit.

The command line (and a script's ``#SBATCH`` words) is read by the command-line kit,
``plurm.common.cli``, against the table of ``plurm.grammar.options`` (grammar is the bottom
layer: it may not import the kit, so the two meet here).  --help, --usage and --version are
answered here, and an option error is printed with Slurm's exit code; otherwise the parsed
request comes back.
"""

from __future__ import annotations

import os
import sys
from collections import namedtuple

from plurm.common import cli
from plurm.grammar.options import Option, OptionError, options_for

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only (start-up cost)
    from typing import Any, Callable, Generator

__all__ = ["Parsed", "getopt", "iter_getopt", "lookup_long", "parse_or_answer", "help_text",
           "usage_text", "version_text"]

_TEXTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "texts")

# A parsed option: the table's row, its value (None for flags / an optional argument not
# given), the argv words consumed, and the position in args of the first of them.
Parsed = namedtuple("Parsed", ["option", "value", "given", "index"], defaults=(0,))
_HAS_ARG = {"none": cli.NO_ARGUMENT, "required": cli.REQUIRED_ARGUMENT,
            "optional": cli.OPTIONAL_ARGUMENT}
_TABLES: dict[str, cli.Table] = {}


def _table(prog: str) -> cli.Table:
    """The kit's table for one command: '+' because sbatch, srun and salloc stop at the
    first operand (the script, the command); the getopt identity (``ident``) is the key,
    so that an identical alias (cpu_bind) is no ambiguity."""
    table = _TABLES.get(prog)
    if table is None:
        longs, shorts = options_for(prog)
        spec = "".join(o.short + {"none": "", "required": ":", "optional": "::"}[o.arg]
                       for o in shorts.values())
        table = _TABLES[prog] = cli.Table(
            "+" + spec, [(o.name, o.ident, _HAS_ARG[o.arg]) for o in longs.values()])
    return table


def lookup_long(prog: str, word: str) -> Option:
    """The row a long option ``word`` (no dashes, no '=value') names, as getopt_long
    resolves abbreviations; KeyError (unknown) or LookupError (ambiguous) otherwise."""
    return options_for(prog)[0][_table(prog).lookup(word)[0]]


def iter_getopt(prog: str, args: list[str]) -> Generator[Parsed, None, list[str]]:
    """The command line (or a script's directives) one option at a time, so that each
    value is applied (and refused) before a later word is looked at -- sbatch reports a
    bad value before a later unknown option.  Returns the remaining words; a getopt
    error is Slurm's two lines and status 255."""
    longs, shorts = options_for(prog)
    it = cli.iter_getopt(prog, args, _table(prog))
    while True:
        try:
            p = next(it)
        except StopIteration as stop:
            return stop.value
        except cli.OptionError as exc:
            raise OptionError([exc.message, cli.try_help(prog)], 255) from None
        opt = longs[p.spelled[2:]] if p.spelled.startswith("--") else shorts[p.spelled[1]]
        yield Parsed(opt, p.value, p.given, p.index)


def getopt(prog: str, args: list[str]) -> tuple[list[Parsed], list[str]]:
    """The whole command line: (parsed options, the words after them)."""
    return cli.collect(iter_getopt(prog, args))


# ------------------------------------------------------------------------- answer or go on
def _text(name: str) -> str:
    with open(os.path.join(_TEXTS, name), encoding="utf-8") as handle:
        return handle.read()


def help_text(prog: str = "sbatch") -> str:
    return _text(f"help_{prog}.txt")


def usage_text(prog: str = "sbatch") -> str:
    return _text(f"usage_{prog}.txt")


def version_text(prog: str = "sbatch") -> str:
    return _text("version_sbatch.txt")


def parse_or_answer(prog: str, parse: Callable[..., Any], *args: Any) -> tuple[Any, int | None]:
    """(request, None) to go on, or (None, exit code) when the command is done."""
    try:
        req = parse(*args)
    except OptionError as exc:
        for line in exc.lines:
            print(line, file=sys.stderr)
        return None, exc.exit_code
    options = req.options
    if options.get("help"):
        sys.stdout.write(help_text(prog))
        return None, 0
    if options.get("usage"):
        sys.stdout.write(usage_text(prog))
        return None, 0
    if options.get("version"):
        from plurm import write_version

        write_version()  # stdout: Slurm's line; stderr: plurm's
        return None, 0
    return req, None
