"""Run as a test user: send one request whose header claims another uid and gid.

    python forge.py MSG_TYPE JSON_BODY CLAIMED_UID

The credential is the user's own (munge vouches for the real uid); only the header's
claim is forged, as the attack on the old protocol did.  Prints the reply (or the
error) as JSON on stdout.
"""

from __future__ import annotations

import json
import sys

from plurm.wire import envelope
from plurm.wire.client import ClientError, Connection


def main() -> int:
    msg_type, body, claimed = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
    real = envelope.make_header

    def forged(*args, **kwargs):
        header = real(*args, **kwargs)
        header["uid"], header["gid"] = claimed, claimed
        return header

    envelope.make_header = forged
    conn = Connection()
    try:
        print(json.dumps({"reply": conn.request(msg_type, body)}))
    except ClientError as exc:
        print(json.dumps({"error": str(exc), "code": exc.code}))
    finally:
        conn.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
