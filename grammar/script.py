"""Batch-script reader: the ``#!`` line, ``#SBATCH`` directives, where reading stops, and the
lines that look like directives but are not (with the reason, for users and tests).

Tokenizer decision -- hand-written, no lark.  Measured on this machine (python 3.11.7,
2 cores): ``python -X importtime -c "import lark"`` costs 31-32 ms cumulative (DESIGN.md
cites ~80 ms on its machine) -- several times the whole budget real sbatch needs to submit
(~7 ms) -- while a directive line is a tiny regular language (words, two kinds of quotes,
backslash, '#' comment).  The character loop below reads a 22-line script
(gpu_single_long_equals.sbatch) in 54 us, and a whole parse_sbatch of it takes 141 us; it
imports nothing.  The rules are those
sbatch applies, observed side by side with sbatch 22.05.8:

* the whole line is one word list; blanks separate words unless quoted;
* '"' and "'" group and are removed; a backslash makes the next character literal (inside
  quotes too) -- except that an unquoted blank still ends the word (``a\\ b`` is two words);
* an unquoted, unescaped '#' ends the line, even in the middle of a word;
* a word that comes out empty (``''``) ends the line: the rest is not read;
* an unterminated quote is fatal (status 1): ``<path>: line N: Unmatched `"` in [text]``;
* a lone ``hetjob`` (``packjob``) separates heterogeneous-job components.
"""
from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only (start-up cost)
    from typing import Any

from .values import OptionError

__all__ = ["Directive", "ScriptInfo", "read_script", "tokenize", "check_script",
           "translate_pbs", "MAGIC_WORDS", "HETJOB_WORDS"]

MAGIC_WORDS = ("#SBATCH", "#SLURM")   # #SLURM is the deprecated spelling
HETJOB_WORDS = ("hetjob", "packjob")
_BLANKS = " \t\r\v\f"


class Directive:
    """One #SBATCH line: its words after quote/escape processing."""
    __slots__ = ("line", "tokens", "text", "magic", "component")

    def __init__(self, line: int, tokens: list[str], text: str, magic: str = "#SBATCH",
                 component: int = 0) -> None:
        self.line = line            # 1-based line number
        self.tokens = tokens
        self.text = text            # the line as written
        self.magic = magic
        self.component = component  # heterogeneous-job component

    def __repr__(self) -> str:
        return f"Directive({self.line}, {self.tokens!r}, component={self.component})"


class ScriptInfo:
    """What the reader found: interpreter, directives, where reading stopped, look-alikes."""
    __slots__ = ("interpreter", "directives", "first_command", "not_directives", "components",
                 "pbs")

    def __init__(self, interpreter: dict[str, Any] | None) -> None:
        self.interpreter = interpreter
        self.directives: list[Directive] = []
        self.first_command: dict[str, Any] | None = None
        self.not_directives: list[dict[str, Any]] = []
        self.components = 1
        self.pbs: list[Directive] = []      # #PBS lines, translated unless --ignore-pbs


class UnmatchedQuote(Exception):
    def __init__(self, quote: str) -> None:
        self.quote = quote
        self.line_no = 0
        self.text = ""


def tokenize(text: str) -> tuple[list[str], str]:
    """Split one directive's text into words.  Returns (words, comment) where comment is
    what followed an unquoted '#' (empty when none).  Raises UnmatchedQuote."""
    words: list[str] = []
    cur: list[str] = []
    in_word = False
    quote = ""
    escape = False
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if not quote and ch in _BLANKS:
            # an unquoted blank ends the word, even after a backslash (sbatch behaviour);
            # a word left empty ('' or "") ends the whole line, as in sbatch:
            # "--time '' 5" is --time without its argument, and the 5 is never read
            if in_word:
                if not cur:
                    return words, ""
                words.append("".join(cur))
            cur, in_word = [], False
            escape = False
        elif escape:
            cur.append(ch)
            escape, in_word = False, True
        elif ch == "\\":
            escape = True   # a backslash escaping nothing (end of line) adds no word
        elif quote:
            if ch == quote:
                quote = ""
            else:
                cur.append(ch)
        elif ch in "\"'":
            quote, in_word = ch, True
        elif ch == "#":
            if in_word and cur:
                words.append("".join(cur))
            return words, text[i:]
        else:
            cur.append(ch)
            in_word = True
        i += 1
    if quote:
        raise UnmatchedQuote(quote)
    if in_word and cur:
        words.append("".join(cur))
    return words, ""


def check_script(data: bytes, prog: str = "sbatch") -> str:
    """Whole-file checks sbatch makes before reading directives; returns the text."""
    if not data:
        raise OptionError([f"{prog}: error: Batch script is empty!"], 1)
    if not data.strip():
        raise OptionError([f"{prog}: error: Batch script contains only whitespace!"], 1)
    if not data.startswith(b"#!"):
        raise OptionError([
            f"{prog}: error: This does not look like a batch script.  The first",
            f"{prog}: error: line must start with #! followed by the path to an interpreter.",
            f"{prog}: error: For instance: #!/bin/sh"], 1)
    if b"\0" in data:
        raise OptionError([f"{prog}: error: The Slurm controller does not allow scripts "
                           "that contain a NULL character '\\0'."], 1)
    if b"\r\n" in data:
        raise OptionError([f"{prog}: error: Batch script contains DOS line breaks (\\r\\n)",
                           f"{prog}: error: instead of expected UNIX line breaks (\\n)."], 1)
    return data.decode("utf-8", errors="surrogateescape")


def _near_sbatch(word: str) -> bool:
    """A misspelling of SBATCH: same length +-1 and at most two edits (tiny Levenshtein)."""
    a, b = word.upper(), "SBATCH"
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1] <= 2 or sorted(a) == sorted(b)


def _why_not(line: str) -> str | None:
    """Reason a line before the first command looks like a directive but is not one."""
    s = line
    if s[:1] in _BLANKS and s.lstrip(_BLANKS).startswith(MAGIC_WORDS):
        return "leading-whitespace (the magic word must start in column 1)"
    if not s.startswith("#"):
        return None
    if s.startswith("##") and s.lstrip("#").startswith("SBATCH"):
        return "double-hash (commented out)"
    if s.startswith(("#DW ", "#BB ")) or s in ("#DW", "#BB"):
        return "burst-buffer directive (read by the burst_buffer plugin, not an sbatch option)"
    word = s[1:].split(None, 1)[0] if s[1:].strip() else ""
    if s[1:2] in (" ", "\t") and word.upper() == "SBATCH":
        return "hash-space ('# SBATCH' is a comment)"
    if word and word.upper() == "SBATCH":
        return "wrong case (the magic word is case-sensitive)"
    if word and word.isalpha() and _near_sbatch(word):
        return "misspelled magic word"
    if "#SBATCH" in s[1:]:
        return "commented-out with a prefix"
    return None


def read_script(text: str) -> ScriptInfo:
    """Read the interpreter line and the directive block of a script that passed
    :func:`check_script`.  Raises OptionError for an unmatched quote (status 1, via the
    caller, which knows the path: see ``UnmatchedQuote`` handling in sbatch_cli)."""
    lines = text.split("\n")
    first = lines[0]
    prog_arg = first[2:].strip(_BLANKS)
    program, _, argument = prog_arg.partition(" ")
    argument = argument.strip(_BLANKS)
    info = ScriptInfo({"line": first, "program": program, "argument": argument or None})
    if "#SBATCH" in first:
        info.not_directives.append({"line": 1, "text": first,
                                    "reason": "part of the interpreter line"})
    component = 0
    stop_line = None
    if lines and lines[-1] == "":
        lines = lines[:-1]
    for no, line in enumerate(lines[1:], 2):
        if stop_line is not None:
            if line.lstrip(_BLANKS).startswith(MAGIC_WORDS):
                info.not_directives.append({"line": no, "text": line, "reason":
                                            f"after the first command (line {stop_line})"})
            continue
        magic = next((m for m in MAGIC_WORDS if line.startswith(m)), None)
        if magic is not None:
            try:
                words, comment = tokenize(line[len(magic):])
            except UnmatchedQuote as exc:
                exc.line_no = no
                exc.text = line[len(magic):].strip(_BLANKS)
                raise
            if "#SBATCH" in comment:
                info.not_directives.append({"line": no, "text": line, "reason":
                                            "the second #SBATCH on this line is inside a "
                                            "comment"})
            if len(words) == 1 and words[0] in HETJOB_WORDS:
                component += 1
                continue
            if words:
                info.directives.append(Directive(no, words, line, magic, component))
            continue
        if line.startswith("#PBS") and line[4:5] in ("", " ", "\t"):
            try:
                words, _ = tokenize(line[4:])
            except UnmatchedQuote as exc:
                exc.line_no, exc.text = no, line[4:].strip(_BLANKS)
                raise
            info.pbs.append(Directive(no, words, line, "#PBS", component))
            info.not_directives.append({"line": no, "text": line, "reason":
                                        "#PBS (translated into sbatch options, applied after "
                                        "the #SBATCH ones; see pbs_translated)"})
            continue
        stripped = line.strip(_BLANKS)
        if stripped == "" or stripped.startswith("#"):
            reason = _why_not(line)
            if reason:
                info.not_directives.append({"line": no, "text": line, "reason": reason})
            continue
        stop_line = no
        info.first_command = {"line": no, "text": line}
    info.components = component + 1
    return info


# ------------------------------------------------------------------------------- #PBS lines
# Translation of the PBS/Torque options sbatch honours in "#PBS" lines (observed with sbatch
# 22.05.8): unknown letters are ignored, as sbatch does.
_PBS_WITH_ARG = set("aAcCejklmMNopqrStuvW")
_PBS_SIMPLE = {"a": "begin", "A": "account", "e": "error", "M": "mail-user", "N": "job-name",
               "o": "output", "p": "nice", "q": "partition", "t": "array", "v": "export"}
_PBS_MAIL = {"a": "FAIL", "b": "BEGIN", "e": "END", "n": "NONE"}


def _pbs_resources(spec: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    rest = spec
    while rest:
        key, eq, rest = rest.partition("=")
        if not eq:
            break
        if key == "ncpus":          # sbatch takes the rest of the list as the number
            out.append(("mincpus", rest))
            break
        val, _, rest = rest.partition(",")
        if key == "walltime":
            out.append(("time", val))
        elif key == "mem":
            out.append(("mem", val))
        elif key == "pmem":
            out.append(("mem-per-cpu", val))
        elif key == "nodes":
            count, _, extra = val.partition(":")
            out.append(("nodes", count))
            if extra.startswith("ppn=") and count.isdigit() and extra[4:].isdigit():
                out.append(("ntasks", str(int(count) * int(extra[4:]))))
    return out


def translate_pbs(words: list[str]) -> list[tuple[str, str, str]]:
    """(given, sbatch long option, value) for the words of #PBS lines."""
    out: list[tuple[str, str, str]] = []
    i = 0
    while i < len(words):
        w = words[i]
        i += 1
        if len(w) < 2 or w[0] != "-":
            continue
        letter, val = w[1], w[2:]
        if letter in _PBS_WITH_ARG and not val:
            if i >= len(words):
                break
            val = words[i]
            i += 1
        given = f"-{letter} {val}".rstrip()
        if letter in _PBS_SIMPLE:
            out.append((given, _PBS_SIMPLE[letter], val))
        elif letter == "h":
            out.append((given, "hold", ""))
        elif letter == "l":
            out += [(given, k, v) for k, v in _pbs_resources(val)]
        elif letter == "m":
            types = [_PBS_MAIL[c] for c in val if c in _PBS_MAIL]
            if types:
                out.append((given, "mail-type", ",".join(types)))
        elif letter == "W" and val.startswith("depend="):
            out.append((given, "dependency", val[7:]))
    return out
