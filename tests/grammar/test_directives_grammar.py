"""directives.lark (the specification) and script.tokenize (the fast tokenizer the commands
run) agree on every directive text: same (words, comment), UnmatchedQuote on the same texts."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

pytest.importorskip("lark")

from plurm.grammar import directives_spec as spec  # noqa: E402  (after the lark check)
from plurm.grammar import script  # noqa: E402
from plurm.grammar.script import UnmatchedQuote  # noqa: E402

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "sbatch"

Result = tuple[list[str], str] | tuple[str, str]


def _run(fn, text: str) -> Result:  # type: ignore[no-untyped-def]
    """fn(text), or ("UnmatchedQuote", quote) when it raises that."""
    try:
        words, comment = fn(text)
    except UnmatchedQuote as exc:
        return "UnmatchedQuote", exc.quote
    return words, comment


def _agree(text: str) -> Result:
    got = _run(spec.parse, text)
    assert got == _run(script.tokenize, text), text
    return got


# ------------------------------------------------------------------ each rule, pinned

@pytest.mark.parametrize("text, want", [
    ("", ([], "")),
    (" --mem=4G  -N 2\t", (["--mem=4G", "-N", "2"], "")),
    # quotes group and are removed; a backslash is literal-next, inside quotes too
    (" --comment='a b'\"c d\"", (["--comment=a bc d"], "")),
    (r""" 'it\'s' "say \"hi\"" "a\ b" """, (["it's", 'say "hi"', "a b"], "")),
    # an unquoted blank still ends the word after a backslash; a dropped trailing backslash
    (r" a\ b \ c\ ", (["a", "b", "c"], "")),
    (" a\\", (["a"], "")),
    (r" \\ \# \' \"", (["\\", "#", "'", '"'], "")),
    # '#' ends the line, even glued to a word; a quoted or escaped '#' does not
    (" --mem=4G#glued", (["--mem=4G"], "#glued")),
    (" -c 8 ## note 'x", (["-c", "8"], "## note 'x")),
    (" --comment='tuned # x' \\#y", (["--comment=tuned # x", "#y"], "")),
    # empty quotes add nothing inside a word; an empty word ends the line
    (" a''b ''\"\"c", (["ab", "c"], "")),
    (" --time '' 5 'unread", (["--time"], "")),
    (" a ''", (["a"], "")),
    (" a ''#c", (["a"], "#c")),
    (" a ''\\", (["a"], "")),
    # unterminated quotes (read ones only)
    (" --comment='abc", ("UnmatchedQuote", "'")),
    (' "a\\"', ("UnmatchedQuote", '"')),
    (" '''", ("UnmatchedQuote", "'")),
    (" a # 'unread", (["a"], "# 'unread")),
])
def test_rules(text: str, want: Result) -> None:
    assert _agree(text) == want


# ------------------------------------------------------------------ corpus directives

def _corpus_lines() -> list[tuple[str, str]]:
    out = []
    for path in sorted(CORPUS.glob("*.sbatch")) if CORPUS.is_dir() else []:
        text = path.read_bytes().decode("utf-8", errors="surrogateescape")
        for no, line in enumerate(text.split("\n"), 1):
            if line.startswith("#SBATCH"):
                out.append((f"{path.name}:{no}", line[len("#SBATCH"):]))
    return out


_CORPUS_LINES = _corpus_lines()


@pytest.mark.skipif(not _CORPUS_LINES, reason=f"no corpus at {CORPUS}")
@pytest.mark.parametrize("text", [t for _, t in _CORPUS_LINES],
                         ids=[i for i, _ in _CORPUS_LINES] or None)
def test_corpus_lines(text: str) -> None:
    _agree(text)


# ------------------------------------------------------------------ hypothesis

# Characters that stress every rule: text, blanks (all of script._BLANKS), both quotes,
# backslash, '#'; plus "\n" and a non-ASCII letter, which are ordinary text.
_CHARS = "ab=-, \t'\"\\#"
_MORE_CHARS = _CHARS + "\r\v\f\nµ"
# Fragments that make the interesting sequences likely (empty quotes before a blank,
# escaped quotes inside quotes, backslash before a blank or the end).
_FRAGMENTS = st.sampled_from(["''", '""', "'", '"', "\\", "\\ ", "\\'", '\\"', "\\#", "#",
                              " ", "\t", "a", "--x=", ",", "'a b'", '"a\\"b"', "''\\ "])


@settings(max_examples=1500, deadline=None)
@given(st.one_of(
    st.text(alphabet=_CHARS, max_size=20),
    st.text(alphabet=_MORE_CHARS, max_size=30),
    st.lists(_FRAGMENTS, max_size=12).map("".join),
))
@example(" --mem=4G #SBATCH --partition=debug")
@example("''\\")
def test_grammar_and_tokenizer_agree(text: str) -> None:
    _agree(text)


# ------------------------------------------------------------------ grammar hygiene

def test_every_grammar_rule_is_handled() -> None:
    rules = {str(rule.origin.name) for rule in spec.parser().rules}
    rules = {r for r in rules if not r.startswith("_")}   # inlined / lark's helper rules
    handlers = {name for name, value in vars(spec.WordsTransformer).items()
                if callable(value) and not name.startswith("_")}
    assert rules == handlers
    assert rules == {"start", "tail", "word", "empty_word"}


def test_parser_is_built_once() -> None:
    first = spec.parser()
    misses = spec.parser.cache_info().misses
    spec.parse(" a b")
    spec.parse(" c")
    assert spec.parser() is first
    assert spec.parser.cache_info().misses == misses
