"""The command-line kit (plurm.common.cli) against glibc's getopt_long.

Three references: Python's ``getopt.gnu_getopt`` for what it shares with glibc (argument
permutation, ``--``, required arguments, unique prefixes), glibc itself through a tiny C
program built here when a compiler is at hand (abbreviations of identical aliases,
optional arguments, the exact messages), and explicit cases of glibc's observed
behaviour.  Then: the user commands read their command lines through the kit and no
other parser.
"""
from __future__ import annotations

import ast
import getopt as pygetopt
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plurm.common import cli
from plurm.common.cli import OptionError, Table, getopt_long, getopt_or_usage, parse

PKG = Path(cli.__file__).resolve().parents[1]

# ------------------------------------------------------------------- generated command lines
SHORT_LETTERS = "abcdvxo"
LONG_NAMES = ["alpha", "alpine", "beta", "bet", "gamma", "gam", "verbose", "version", "v2"]


@st.composite
def tables(draw: st.DrawFn, optional: bool = False) -> tuple[str, list[tuple[str, object, int]]]:
    """A short-option string and a long table; keys all distinct unless ``optional``
    (then aliases may share a key, and arguments may be optional)."""
    kinds = [0, 1, 2] if optional else [0, 1]
    letters = draw(st.lists(st.sampled_from(SHORT_LETTERS), unique=True, max_size=6))
    shortopts = "".join(ch + ["", ":", "::"][draw(st.sampled_from(kinds))] for ch in letters)
    names = draw(st.lists(st.sampled_from(LONG_NAMES), unique=True, max_size=7))
    longs: list[tuple[str, object, int]] = []
    for i, name in enumerate(names):
        key: object = 1000 + i
        if optional and longs and draw(st.booleans()):
            key = longs[-1][1]          # an alias of the previous option
        longs.append((name, key, draw(st.sampled_from(kinds))))
    return shortopts, longs


def _words(names: list[str], letters: str) -> st.SearchStrategy[str]:
    """Command-line words aimed at a table: its long names whole or cut short (with or
    without '=value'), an unknown one, clusters of its letters (and an unknown 'z') with
    or without a glued value, operands, '--'."""
    value = st.sampled_from(["", "", "x", "1", "-a", "=y"])
    long_word = st.builds(lambda n, cut, eq, v: "--" + n[:max(1, len(n) - cut)] + (("=" + v) if eq else ""),
                          st.sampled_from(names + ["zeta"]), st.integers(0, 4), st.booleans(),
                          value)
    short_word = st.builds(lambda cs, v: "-" + cs + v,
                           st.text(alphabet=letters + "z", min_size=1, max_size=3), value)
    operand = st.sampled_from(["op", "x", "-", "12", ""])
    return st.one_of(long_word, long_word, short_word, short_word, operand, st.just("--"))


@st.composite
def cases(draw: st.DrawFn, optional: bool = False) -> tuple[str, list, list[str]]:
    """(short-option string, long table, argv), the words drawn for that table; '+' (stop
    at the first operand) half of the time."""
    shortopts, longs = draw(tables(optional))
    letters = "".join(ch for ch in shortopts if ch != ":") or "a"
    argv = draw(st.lists(_words([n for n, _k, _a in longs] or ["alpha"], letters), max_size=6))
    return ("+" if draw(st.booleans()) else "") + shortopts, longs, argv


def _kit(argv: list[str], shortopts: str, longs: list[tuple[str, object, int]]):
    try:
        parsed, operands = parse("prog", argv, Table(shortopts, longs), environ={})
    except OptionError as exc:
        return "error", exc.message
    return [(p.spelled, p.value) for p in parsed], operands


_GNU_KINDS = [  # gnu_getopt's words -> glibc's; short first: "-a-" is "option -- ..."
    (r"option -(.) not recognized", "prog: invalid option -- '{}'"),
    (r"option -(.) requires argument", "prog: option requires an argument -- '{}'"),
    (r"option --(.*) not recognized", "prog: unrecognized option '--{}"),
    (r"option --(.*) not a unique prefix", "prog: option '--{}"),
    (r"option --(.*) requires argument", "prog: option '--{}' requires an argument"),
    (r"option --(.*) must not have an argument", "prog: option '--{}' doesn't allow an argument"),
]


def _gnu(argv: list[str], shortopts: str, longs: list[tuple[str, object, int]]):
    names = [n + ("=" if has_arg else "") for n, _k, has_arg in longs]
    posixly = os.environ.pop("POSIXLY_CORRECT", None)   # gnu_getopt reads it too
    try:
        pairs, operands = pygetopt.gnu_getopt(argv, shortopts, names)
    except pygetopt.GetoptError as exc:
        for pattern, glibc in _GNU_KINDS:
            m = re.fullmatch(pattern, exc.msg)
            if m:
                return "error", glibc.format(m.group(1))
        raise
    finally:
        if posixly is not None:
            os.environ["POSIXLY_CORRECT"] = posixly
    kinds = {n: a for n, _k, a in longs} | {ch: shortopts[i + 1:i + 2] == ":"
                                            for i, ch in enumerate(shortopts) if ch != ":"}
    return [(opt, value if kinds[opt.lstrip("-")] else None) for opt, value in pairs], operands


def _same_error(kit_msg: str, gnu_msg: str) -> bool:
    # glibc names an unknown or ambiguous long option as given, '=value' included; gnu_getopt
    # names it without the value; ambiguity lists candidates gnu_getopt does not
    if gnu_msg.startswith("prog: unrecognized option '--"):
        return kit_msg.startswith(gnu_msg) and re.fullmatch(r"(=.*)?'", kit_msg[len(gnu_msg):]) is not None
    if gnu_msg.startswith("prog: option '--") and "'" not in gnu_msg[len("prog: option '--"):]:
        return kit_msg.startswith(gnu_msg) and " is ambiguous; possibilities: " in kit_msg
    return kit_msg == gnu_msg


@settings(max_examples=400, deadline=None)
@given(cases())
def test_matches_gnu_getopt(case: tuple[str, list, list[str]]) -> None:
    shortopts, longs, argv = case
    kit, gnu = _kit(argv, shortopts, longs), _gnu(argv, shortopts, longs)
    if gnu[0] == "error" or kit[0] == "error":
        assert kit[0] == gnu[0] == "error", (kit, gnu)
        assert _same_error(kit[1], gnu[1]), (kit, gnu)
    else:
        assert kit == gnu


# ------------------------------------------------------------ glibc itself, when it can be built
HARNESS = r"""
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* h PROG SHORTOPTS 'name=has_arg=val;...' args... : one line per option, then operands */
int main(int argc, char **argv) {
  static struct option lo[64]; int n = 0;
  for (char *t = strtok(argv[3], ";"); t; t = strtok(NULL, ";")) {
    char *a = strchr(t, '='); *a = 0; char *b = strchr(a + 1, '='); *b = 0;
    lo[n].name = t; lo[n].has_arg = atoi(a + 1); lo[n].flag = NULL; lo[n].val = atoi(b + 1); n++;
  }
  char *opts = argv[2]; argv[3] = argv[1];
  int ac = argc - 3; char **av = argv + 3; int c, i;
  while ((c = getopt_long(ac, av, opts, lo, &i)) != -1) {
    if (c == '?') return 1;
    printf("opt %d %s\n", c, optarg ? optarg : "(null)");
  }
  for (; optind < ac; optind++) printf("arg %s\n", av[optind]);
  return 0;
}
"""


@pytest.fixture(scope="module")
def glibc(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None or not sys.platform.startswith("linux"):
        pytest.skip("no C compiler: glibc's own getopt_long cannot be run")
    where = tmp_path_factory.mktemp("getopt")
    (where / "h.c").write_text(HARNESS)
    subprocess.run([cc, "-O", "-o", str(where / "h"), str(where / "h.c")], check=True)
    return where / "h"


def _val(key: object) -> int:
    return ord(key) if isinstance(key, str) else int(key)  # type: ignore[arg-type]


def _run_glibc(exe: Path, argv: list[str], shortopts: str, longs: list[tuple[str, object, int]]):
    spec = ";".join(f"{n}={a}={_val(k)}" for n, k, a in longs)
    env = {k: v for k, v in os.environ.items() if k != "POSIXLY_CORRECT"}
    out = subprocess.run([str(exe), "prog", shortopts, spec, *argv], capture_output=True,
                         text=True, env=env)
    if out.returncode:
        return "error", out.stderr.rstrip("\n")
    opts, operands = [], []
    for line in out.stdout.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "opt":
            val, _, arg = rest.partition(" ")
            opts.append((int(val), None if arg == "(null)" else arg))
        else:
            operands.append(rest)
    return opts, operands


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cases(optional=True))
def test_matches_glibc(glibc: Path, case: tuple[str, list, list[str]]) -> None:
    shortopts, longs, argv = case
    ref = _run_glibc(glibc, argv, shortopts, longs)
    try:
        parsed, operands = parse("prog", argv, Table(shortopts, longs), environ={})
    except OptionError as exc:
        assert ref == ("error", exc.message)
        return
    assert ref == ([(_val(p.key), p.value) for p in parsed], operands)


# ----------------------------------------------------------------------------- explicit cases
SHORT = "ab:c::v"
LONG = {"alpha": ("a", 0), "beta": (1001, 1), "bet": (1002, 2), "cluster": ("M", 1),
        "clusters": ("M", 1), "verbose": ("v", 0), "version": ("V", 0)}


@pytest.mark.parametrize("argv,opts,operands", [
    (["x", "-a", "y", "--alpha"], [("a", None), ("a", None)], ["x", "y"]),        # permutation
    (["-a", "--", "-a", "--beta"], [("a", None)], ["-a", "--beta"]),               # -- ends options
    (["-vvab", "1"], [("v", None), ("v", None), ("a", None), ("b", "1")], []),    # a cluster
    (["-bvalue", "-b", "-x"], [("b", "value"), ("b", "-x")], []),                  # attached / next word
    (["-cval", "-c", "op"], [("c", "val"), ("c", None)], ["op"]),                  # optional: attached only
    (["--bet=1", "--bet", "op"], [(1002, "1"), (1002, None)], ["op"]),             # long optional
    (["--beta", "2", "--beta=", "--beta=3"], [(1001, "2"), (1001, ""), (1001, "3")], []),
    (["--alp", "--verb", "--vers"], [("a", None), ("v", None), ("V", None)], []),  # abbreviations
    (["--clu=a", "--cluster", "b"], [("M", "a"), ("M", "b")], []),                 # identical aliases
    (["--beta", "--"], [(1001, "--")], []),                                        # "--" as a value
    (["-", "-a"], [("a", None)], ["-"]),                                           # "-" is an operand
])
def test_getopt_long_forms(argv: list[str], opts: list, operands: list[str]) -> None:
    assert getopt_long("prog", argv, SHORT, LONG, environ={}) == (opts, operands)


@pytest.mark.parametrize("argv,message", [
    (["--x"], "prog: unrecognized option '--x'"),
    (["--x=1"], "prog: unrecognized option '--x=1'"),
    (["-b"], "prog: option requires an argument -- 'b'"),
    (["--beta"], "prog: option '--beta' requires an argument"),
    (["--be"], "prog: option '--be' is ambiguous; possibilities: '--beta' '--bet'"),
    (["--ver=2"], "prog: option '--ver=2' is ambiguous; possibilities: '--verbose' '--version'"),
    (["-x"], "prog: invalid option -- 'x'"),
    (["-a:"], "prog: invalid option -- ':'"),
    (["--alpha=1"], "prog: option '--alpha' doesn't allow an argument"),
    (["--alp=1"], "prog: option '--alpha' doesn't allow an argument"),  # the full name
    (["op", "-a", "--x", "-y"], "prog: unrecognized option '--x'"),      # the first, left to right
])
def test_glibc_messages(argv: list[str], message: str) -> None:
    with pytest.raises(OptionError) as info:
        getopt_long("prog", argv, SHORT, LONG, environ={})
    assert info.value.message == message


def test_in_order_and_posixly_correct() -> None:
    argv = ["-a", "cmd", "-v", "--", "x"]
    assert getopt_long("prog", argv, "+" + SHORT, LONG, environ={}) == ([("a", None)], argv[1:])
    assert getopt_long("prog", argv, SHORT, LONG, environ={"POSIXLY_CORRECT": ""}) == (
        [("a", None)], argv[1:])
    assert getopt_long("prog", argv, SHORT, LONG, environ={}) == (
        [("a", None), ("v", None)], ["cmd", "x"])
    # a '--' before the first operand is consumed in order mode too
    assert getopt_long("prog", ["--", "-a"], "+a", {}, environ={}) == ([], ["-a"])


def test_parsed_words_and_usage() -> None:
    parsed, _ = parse("prog", ["-vb1", "--beta", "2", "-v"], Table(SHORT, LONG), environ={})
    assert [(p.spelled, p.index, p.given) for p in parsed] == [
        ("-v", 0, ["-v"]), ("-b", 0, ["-vb1"]), ("--beta", 1, ["--beta", "2"]), ("-v", 3, ["-v"])]
    with pytest.raises(cli.Usage) as info:
        getopt_or_usage("squeue", ["--bogus"], "a", {})
    assert (info.value.text, info.value.code, info.value.stream) == (
        "squeue: unrecognized option '--bogus'\nTry \"squeue --help\" for more information\n", 1,
        "stderr")


# ------------------------------------------------------------------- one parser, and a cheap one
# Every module of tools/ serves the user commands, except `plurm` itself (argparse, off the
# commands' path) and what it runs: a new module is checked without being listed here.
NOT_USER_COMMANDS = {"__init__", "plurm", "localcluster", "demo", "bench", "top"}  # plurm and its subcommands: argparse
USER_COMMANDS = sorted(p.stem for p in (PKG / "tools").glob("*.py") if p.stem not in NOT_USER_COMMANDS)
FORBIDDEN = ("import getopt", "from getopt", "gnu_getopt", "argparse", "optparse", "glibc_message",
             "def getopt_long")


def _own_loop(tree: ast.AST) -> list[str]:
    """Places that look at a command-line word's dashes: ``arg.startswith("-")``,
    ``argv[i] == "--"`` -- the kit's job."""
    found = []
    for node in ast.walk(tree):
        target = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "startswith" and node.args:
            consts = [a for a in ast.walk(node.args[0]) if isinstance(a, ast.Constant)]
            if any(isinstance(c.value, str) and c.value.startswith("-") for c in consts):
                target = node.func.value
        elif isinstance(node, ast.Compare) and any(
                isinstance(c, ast.Constant) and c.value in ("-", "--") for c in node.comparators):
            target = node.left
        if target is not None and re.search(r"\barg", ast.unparse(target)):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("name", USER_COMMANDS)
def test_commands_use_only_the_kit(name: str) -> None:
    source = (PKG / "tools" / f"{name}.py").read_text()
    assert not [w for w in FORBIDDEN if w in source], name
    assert not _own_loop(ast.parse(source)), name


def test_the_option_table_has_no_parser() -> None:
    source = (PKG / "grammar" / "options.py").read_text()
    tree = ast.parse(source)
    defs = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    assert not defs & {"getopt", "iter_getopt", "lookup_long"}
    assert not _own_loop(tree)


def test_every_command_reads_its_line_through_the_kit() -> None:
    for name in ["frontend", "squeue", "sinfo", "scancel", "sacct", "sacctmgr", "scontrol",
                 "sprio", "sshare"]:
        source = (PKG / "tools" / f"{name}.py").read_text()
        assert re.search(r"plurm\.common(\.cli| import cli)", source), name


def test_import_cost() -> None:
    """The kit imports nothing; no command brings a stdlib option parser."""
    mods = ["plurm.common.cli"] + [f"plurm.tools.{n}" for n in USER_COMMANDS]
    code = ("import sys\nbase = set(sys.modules)\nimport plurm.common.cli\n"
            "print(' '.join(sorted(set(sys.modules) - base)))\n"
            f"for m in {mods!r}:\n    __import__(m)\n"
            "print(' '.join(m for m in ('argparse', 'getopt', 'optparse') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    first, second = out.stdout.split("\n")[:2]
    assert set(first.split()) <= {"plurm", "plurm.common", "plurm.common.cli"}
    assert second == ""
