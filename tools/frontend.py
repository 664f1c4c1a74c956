"""What sbatch, srun and salloc do alike before submitting: parse, or answer and exit.

--help, --usage and --version are answered here, and an option error is printed
with Slurm's exit code; otherwise the parsed request comes back.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only (start-up cost)
    from typing import Any, Callable


def parse_or_answer(prog: str, parse: Callable[..., Any], *args: Any) -> tuple[Any, int | None]:
    """(request, None) to go on, or (None, exit code) when the command is done."""
    from plurm.grammar.options import OptionError
    from plurm.tools.sbatch_cli import help_text, usage_text, version_text

    try:
        req = parse(*args)
    except OptionError as exc:
        for line in exc.lines:
            print(line, file=sys.stderr)
        return None, exc.exit_code
    options = req.options
    if options.get("help") or (options.get("usage") and prog != "sbatch"):
        sys.stdout.write(help_text(prog))
        return None, 0
    if options.get("usage"):
        sys.stdout.write(usage_text(prog))
        return None, 0
    if options.get("version"):
        sys.stdout.write(version_text(prog))
        return None, 0
    return req, None
