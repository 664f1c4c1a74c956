"""docs/compatibility.md's table of every sbatch, srun and salloc option (tools/option_table.py):
no option missing, and no "acts" for an option that sbatch still warns it does not act on."""

from __future__ import annotations

import re

from plurm.grammar.options import ALL_OPTIONS, options_for
from plurm.tools import jobspec, option_table

ROW = re.compile(r"^\| `--([\w-]+)`[^|]*\| ([^|]*) \| ([^|]*) \|")


def _page_rows() -> list[tuple[str, set[str], str]]:
    text = option_table.DOC.read_text()
    start = text.index(option_table.HEADING + "\n")
    end = text.find("\n## ", start + 1)
    section = text[start:end if end >= 0 else None]
    return [(m.group(1), {c.strip() for c in m.group(2).split(",")}, m.group(3).strip())
            for m in map(ROW.match, section.splitlines()) if m]


def _warned(key: str) -> bool:
    """Whether sbatch warns "accepts but does not act on" for this option (jobspec.not_acted_on)."""
    other = {} if key in jobspec._HANDLED else {key: "1"}
    return bool(jobspec.not_acted_on({"other_options": other}))


def test_every_option_of_the_three_commands_has_its_row() -> None:
    page = {(name, frozenset(cmds)) for name, cmds, _ in _page_rows()}
    for prog in ("sbatch", "srun", "salloc"):
        for name, opt in options_for(prog)[0].items():
            assert any(n == name and prog in cmds for n, cmds in page), \
                f"--{name} ({prog}) is missing from docs/compatibility.md: python -m plurm.tools.option_table"
    assert len(_page_rows()) == len(ALL_OPTIONS)


def test_acts_only_where_sbatch_does_not_warn() -> None:
    keys = {o.name: o.key for o in ALL_OPTIONS}
    for name, cmds, status in _page_rows():
        if status.startswith("acts") and "sbatch" in cmds:
            assert not _warned(keys[name]), f"the page says --{name} acts, sbatch still warns about it"


def test_the_generator_never_says_acts_for_a_warned_option() -> None:
    for opt in ALL_OPTIONS:
        status, _ = option_table.status(opt)
        if "sbatch" in opt.commands and _warned(opt.key):
            assert not status.startswith("acts"), opt.name


def test_item_8s_options_no_longer_warn() -> None:
    for key in ("cpu-freq", "gpu-freq", "switches", "bb", "bbf", "container", "reboot", "clusters",
                "cluster-constraint", "network", "power", "context", "batch", "wait"):
        assert not _warned(key), key


def test_sbatch_warns_about_no_option_now() -> None:
    """Issue 14's "done": the "accepts but does not act on" list is empty for every option sbatch
    takes (each is acted on in the spec, or kept quietly for a part that reads it)."""
    keys = {getattr(opt, "key", name) for name, opt in options_for("sbatch")[0].items()}
    assert [k for k in sorted(keys) if _warned(k)] == []
