"""The executable form of ``directives.lark``: one directive's text -> (words, comment).

This is the *specification* of what :func:`plurm.grammar.script.tokenize` does, not a
replacement: it imports lark (~31 ms), so only tests and documentation import it, never a
command.  ``parse(text)`` returns exactly what ``script.tokenize(text)`` returns and raises
``script.UnmatchedQuote`` on the same texts (tests/grammar/test_directives_grammar.py).

Parser: LALR with lark's contextual lexer.  The language is regular, and LALR expresses it
without tricks: the only decision -- is a word made of empty quotes the start of a longer word
or an empty word that ends the line? -- is taken on one token of look-ahead, and the
contextual lexer lets the "rest of the line" terminals (STOP, COMMENT) exist only in the
states where they can follow.  Earley is not needed.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path
import lark
from lark import Token, Transformer

from .script import UnmatchedQuote

__all__ = ["GRAMMAR", "parser", "tree", "parse", "WordsTransformer"]

GRAMMAR = Path(__file__).with_name("directives.lark")

_ESCAPE = re.compile(r"\\([\s\S])")


@functools.lru_cache(maxsize=None)
def parser() -> lark.Lark:
    """The LALR parser of ``directives.lark``, built once per process."""
    return lark.Lark(GRAMMAR.read_text(), parser="lalr", lexer="contextual",
                     maybe_placeholders=False)


def _piece(token: Token) -> str:
    """The characters one piece of a word contributes."""
    kind = token.type
    if kind == "PLAIN":
        return str(token)
    if kind == "ESCAPED":
        return token[1]
    if kind in ("SQUOTED", "DQUOTED"):
        return _ESCAPE.sub(r"\1", token[1:-1])
    assert kind == "EMPTIES", kind
    return ""


# What a tail comes out as: (last words, comment).
_Tail = tuple[list[str], str]


class WordsTransformer(Transformer):  # type: ignore[type-arg]
    """Tree -> (words, comment), the shape of ``script.tokenize``.  One method per grammar
    rule (a test fails if a rule of directives.lark has none)."""

    def start(self, children: list[str | _Tail]) -> _Tail:
        # children: the words followed by a separator, then the tail (always last)
        *words, (last, comment) = children
        return [str(w) for w in words] + last, comment

    def tail(self, children: list[str | Token | None]) -> _Tail:
        words: list[str] = []
        comment = ""
        for child in children:
            if isinstance(child, Token):      # Token subclasses str: test it first
                if child.type == "COMMENT":
                    comment = str(child)
                # STOP: the rest of the line after an empty word is not read: no comment
            elif child is not None:           # a word; None is the empty word
                words.append(child)
        return words, comment

    def word(self, children: list[Token]) -> str:
        text = "".join(_piece(t) for t in children)
        assert text, children  # a word has a piece that is not empty quotes
        return text

    def empty_word(self, children: list[Token]) -> None:
        return None


_TRANSFORMER = WordsTransformer()


def tree(text: str) -> lark.Tree:  # type: ignore[type-arg]
    """The parse tree of one directive's text (for documentation and debugging)."""
    try:
        return parser().parse(text)
    except lark.exceptions.UnexpectedInput as exc:
        # The grammar accepts every text except one whose lexing stops at a quote with no
        # closing quote; sbatch reports the quote (tokenize raises UnmatchedQuote(quote)).
        pos = getattr(exc, "pos_in_stream", None)
        char = text[pos] if isinstance(pos, int) and 0 <= pos < len(text) else ""
        if isinstance(exc, lark.exceptions.UnexpectedCharacters) and char and char in "'\"":
            raise UnmatchedQuote(char) from None
        raise  # anything else is a bug in the grammar


def parse(text: str) -> tuple[list[str], str]:
    """(words, comment) of one directive's text, as ``script.tokenize`` gives them.
    Raises ``script.UnmatchedQuote``."""
    result: tuple[list[str], str] = _TRANSFORMER.transform(tree(text))
    return result
