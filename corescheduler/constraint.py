"""--constraint over node Features, as Slurm reads it.

    gpu&fast   every node has both          (a comma means the same as &)
    a|b        every node has a or b
    [r1|r2]    all nodes have the same one: r1 for all, or r2 for all (matching OR)
    knl*2      at least two of the nodes have knl (a count)

``parse`` turns an expression into ``Constraint``: a list of alternatives
(one for a plain expression, one per choice of a bracket), each a node
predicate plus counts.  The scheduler tries the alternatives in order.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class ConstraintError(ValueError):
    pass


@dataclass(frozen=True)
class Alternative:
    """Nodes must satisfy ``all_of`` (each an OR of features); ``counts``: feature -> minimum nodes."""

    all_of: tuple[frozenset[str], ...]
    counts: dict[str, int] = field(default_factory=dict)

    def node_ok(self, features: set[str] | frozenset[str]) -> bool:
        return all(features & choice for choice in self.all_of)

    def features(self) -> set[str]:
        return {f for choice in self.all_of for f in choice} | set(self.counts)


@dataclass(frozen=True)
class Constraint:
    expression: str
    alternatives: tuple[Alternative, ...]

    def features(self) -> set[str]:
        return {f for alt in self.alternatives for f in alt.features()}


def _term(text: str) -> tuple[str, int | None]:
    name, star, count = text.partition("*")
    name = name.strip()
    if not name or not all(c.isalnum() or c in "_-.:=" for c in name):
        raise ConstraintError(f"invalid feature {text!r}")
    if star:
        if not count.strip().isdigit() or int(count) < 1:
            raise ConstraintError(f"invalid feature count in {text!r}")
        return name, int(count)
    return name, None


def _conjunction(text: str) -> tuple[list[frozenset[str]], dict[str, int]]:
    """``a&b|c&d*2``: & binds looser than | here, as Slurm's node-level OR per term."""
    all_of: list[frozenset[str]] = []
    counts: dict[str, int] = {}
    for part in text.replace(",", "&").split("&"):
        choices = []
        for item in part.split("|"):
            name, count = _term(item)
            if count is not None:
                counts[name] = count
            choices.append(name)
        if not counts or len(choices) > 1 or choices[0] not in counts:
            all_of.append(frozenset(choices))
    return all_of, counts


def parse(expression: str) -> Constraint:
    text = expression.strip()
    if not text:
        raise ConstraintError("empty constraint")
    if "[" in text:
        before, _, rest = text.partition("[")
        inner, close, after = rest.partition("]")
        if not close or "[" in inner or "[" in after:
            raise ConstraintError(f"unbalanced brackets in {expression!r}")
        outer = (before.rstrip("&,") + "&" + after.lstrip("&,")).strip("&")
        outer_all, outer_counts = _conjunction(outer) if outer else ([], {})
        alternatives = []
        for choice in inner.split("|"):
            all_of, counts = _conjunction(choice)
            alternatives.append(Alternative(tuple(outer_all + all_of), {**outer_counts, **counts}))
        return Constraint(expression, tuple(alternatives))
    all_of, counts = _conjunction(text)
    return Constraint(expression, (Alternative(tuple(all_of), counts),))
