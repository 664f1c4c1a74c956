"""sshare: shares, usage and Fair Tree fair share factors of the associations."""

from __future__ import annotations

import sys

HEADER = ("Account                    User  RawShares  NormShares    RawUsage  EffectvUsage  FairShare \n"
          "-------------------- ---------- ---------- ----------- ----------- ------------- ---------- \n")


def render(shares: list[dict], header: bool = True, user: str | None = None) -> str:
    """Slurm's layout: accounts indented by their depth, users under them with their factor."""
    out = [HEADER] if header else []
    for line in shares:
        if line["user"] is not None and user is not None and line["user"] != user:
            continue
        name = (" " * line.get("depth", 0) + line["account"])[:20]
        is_root = line["account"] == "root" and line["user"] is None
        raw = "" if is_root else str(line["raw_shares"])
        norm = "" if is_root else f"{line['norm_shares']:.6f}"
        fairshare = "" if line["user"] is None else f"{line['fairshare']:.6f}"
        out.append(f"{name:<20} {(line['user'] or '')[:10]:>10} {raw:>10} {norm:>11} {line['raw_usage']:>11} "
                   f"{line['effective_usage']:>13.6f} {fairshare:>10} \n")
    return "".join(out)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    header = "-n" not in argv and "--noheader" not in argv
    user = None
    for i, arg in enumerate(argv):
        if arg in ("-u", "--users") and i + 1 < len(argv):
            user = argv[i + 1]
        elif arg.startswith("--users="):
            user = arg.split("=", 1)[1]
    from plurm.wire.client import ClientError, request

    try:
        reply = request("share_info", {})
    except ClientError as exc:
        print(f"sshare: error: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(render(reply["shares"], header, user=user))
    return 0


if __name__ == "__main__":
    sys.exit(main())
