"""plurmrestd: the slurmrestd-compatible REST daemon (``plurmrestd`` console script).

Kept apart from rest/server.py so that ``python -m plurm.rest.plurmrestd`` and the entry
point start the same way as plurmctld's (corescheduler/plurmctld.py).
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from plurm.rest.server import main as server_main

    return server_main(argv)


if __name__ == "__main__":
    sys.exit(main())
