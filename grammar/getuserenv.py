"""--get-user-env[=timeout][L|S] (sbatch, salloc): the value 22.05.8 accepts.  Observed on the
anchor: a number (a sign and leading blanks allowed, as strtol reads one), then nothing, or L/S
in either case (what follows that letter is not looked at: `5LS`, `L` pass), else
"Invalid --get-user-env specification", exit 255 (`x`, `10X`).  salloc accepts it too, though
its man page does not list it (its --help: "used by Moab. See srun man page.")."""

from __future__ import annotations

from plurm.grammar.lazyre import lazy  # (no `import re` on sbatch's start-up path)
from plurm.grammar.values import OptionValueError

_NUMBER = lazy(r"\s*(?:[+-]?\d+)?")


def parse_get_user_env(value: str, opt: str = "get-user-env") -> str:
    rest = value[_NUMBER.match(value).end():]  # type: ignore[union-attr]  (the pattern matches "" at least)
    if rest and rest[0] not in "LlSs":
        raise OptionValueError(f"Invalid --{opt} specification")
    return value
