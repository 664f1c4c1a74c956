"""The PMI wire formats a task speaks on its ``PMI_FD`` (parsing and formatting only, no I/O).

Two formats share one descriptor, as MPICH's client library and Slurm's server have them:

- **PMI-1**: one command a line, ``cmd=NAME key=value key=value\\n``; values carry no spaces
  (MPICH hex-encodes what it puts).  Debian's MPICH 4.0 speaks only this one.
- **PMI-2**: a 6-character decimal length, then ``cmd=NAME;key=value;...;`` of that many bytes.
  A ``;`` inside a value is doubled (``;;``), as MPICH's writer escapes it.

Every connection starts in PMI-1 form (``cmd=init pmi_version=2 pmi_subversion=0``); the
answer to an init asking for version 2 switches it to the PMI-2 framing.  A frame that breaks
the rules raises :class:`WireError`; the server closes that connection and says why.
"""

from __future__ import annotations

# MPICH's own bound on a PMI-2 command (PMII_MAX_COMMAND_LEN): a longer one is hostile.
MAX_COMMAND = 64 * 1024
LENGTH_FIELD = 6


class WireError(ValueError):
    """A frame no PMI client sends."""


Command = dict[str, str]  # "cmd" and the attributes, in the order given


def take_v1(buffer: bytearray) -> Command | None:
    """The next PMI-1 command in ``buffer`` (removed from it), or None until a whole line is there."""
    end = buffer.find(b"\n")
    if end < 0:
        if len(buffer) > MAX_COMMAND:
            raise WireError(f"a PMI-1 line longer than {MAX_COMMAND} bytes")
        return None
    line = bytes(buffer[:end]).decode("utf-8", "surrogateescape").strip()
    del buffer[:end + 1]
    command: Command = {}
    for word in line.split():
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise WireError(f"not key=value: {word[:60]!r}")
        command.setdefault(key, value)
    if "cmd" not in command and "mcmd" not in command:
        raise WireError(f"no cmd= in {line[:60]!r}")
    return command


def take_v2(buffer: bytearray) -> Command | None:
    """The next PMI-2 command in ``buffer`` (removed from it), or None until it is whole."""
    if len(buffer) < LENGTH_FIELD:
        return None
    field = bytes(buffer[:LENGTH_FIELD]).decode("ascii", "replace").strip()
    if not field.isdigit():
        raise WireError(f"a PMI-2 length that is no number: {field!r}")
    length = int(field)
    if length > MAX_COMMAND:
        raise WireError(f"a PMI-2 command of {length} bytes (at most {MAX_COMMAND})")
    if len(buffer) < LENGTH_FIELD + length:
        return None
    text = bytes(buffer[LENGTH_FIELD:LENGTH_FIELD + length]).decode("utf-8", "surrogateescape")
    del buffer[:LENGTH_FIELD + length]
    return parse_v2(text)


def parse_v2(text: str) -> Command:
    """``cmd=NAME;key=value;...;`` with ``;;`` standing for a ``;`` inside a value."""
    command: Command = {}
    fields: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == ";" and text[i + 1:i + 2] == ";":
            current.append(";")
            i += 2
            continue
        if char == ";":
            fields.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    if current:
        fields.append("".join(current))
    for item in fields:
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise WireError(f"not key=value: {item[:60]!r}")
        command.setdefault(key, value)
    if "cmd" not in command:
        raise WireError(f"no cmd= in {text[:60]!r}")
    return command


def format_v1(cmd: str, *pairs: tuple[str, str | int]) -> bytes:
    """A PMI-1 reply line: ``cmd=NAME k=v ...\\n``."""
    return (" ".join([f"cmd={cmd}", *(f"{k}={v}" for k, v in pairs)]) + "\n").encode("utf-8", "surrogateescape")


def format_v2(cmd: str, *pairs: tuple[str, str | int]) -> bytes:
    """A PMI-2 reply: its length in 6 characters, then ``cmd=NAME;k=v;...;``."""
    body = "".join([f"cmd={cmd};", *(f"{k}={str(v).replace(';', ';;')};" for k, v in pairs)])
    data = body.encode("utf-8", "surrogateescape")
    return f"{len(data):<{LENGTH_FIELD}d}".encode() + data


def process_mapping(node_of_rank: list[int]) -> str:
    """``PMI_process_mapping``: which node each rank runs on, as MPICH reads it -- runs of
    consecutive ranks on one node, and neighbouring nodes with runs of one length joined into
    ``(first node, nodes, ranks each)``: ``(vector,(0,2,2))`` for 2 nodes x 2 in blocks, as 22.05's
    mpi/pmi2 answers (tests/nodeagent/reference/mpi/pmi1_mpich_rank0.txt); a cyclic layout is
    ``(0,2,1)`` over and over."""
    blocks: list[list[int]] = []  # [node, ranks]
    for node in node_of_rank:
        if blocks and blocks[-1][0] == node:
            blocks[-1][1] += 1
        else:
            blocks.append([node, 1])
    runs: list[list[int]] = []  # [first node, nodes, ranks each]
    for node, count in blocks:
        if runs and runs[-1][2] == count and runs[-1][0] + runs[-1][1] == node:
            runs[-1][1] += 1
        else:
            runs.append([node, 1, count])
    return "(vector," + ",".join(f"({a},{b},{c})" for a, b, c in runs) + ")"


def block_layout(tasks_per_node: list[int]) -> list[int]:
    """The node of each rank when ranks fill the nodes in order (srun's default, -m block)."""
    return [node for node, count in enumerate(tasks_per_node) for _ in range(count)]


def mapping_nodes(mapping: str, ntasks: int) -> list[int] | None:
    """The node of each rank from a ``PMI_process_mapping`` (what :func:`process_mapping` wrote);
    None when it is not one, or does not place exactly ``ntasks`` ranks."""
    import re

    text = mapping.replace(" ", "")
    if not text.startswith("(vector,") or not text.endswith(")"):
        return None
    runs = re.findall(r"\((\d+),(\d+),(\d+)\)", text)
    if not runs or ",".join(f"({a},{b},{c})" for a, b, c in runs) != text[len("(vector,"):-1]:
        return None
    nodes: list[int] = []
    for first, count, each in ((int(a), int(b), int(c)) for a, b, c in runs):
        for node in range(first, first + count):
            nodes.extend([node] * each)
            if len(nodes) > ntasks:
                return None
    return nodes if len(nodes) == ntasks else None
