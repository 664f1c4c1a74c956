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


# sshare's getopt table: long name -> (key, has_arg), as Slurm's sshare spells them
# (-h is --noheader; -n is --noconvert)
_SHORT = "aA:ehlmM:no:pPUu:vV"
_LONG = {
    "accounts": ("A", 1), "all": ("a", 0), "helpformat": ("e", 0), "long": ("l", 0),
    "partition": ("m", 0), "cluster": ("M", 1), "clusters": ("M", 1), "noconvert": ("n", 0),
    "noheader": ("h", 0), "format": ("o", 1), "parsable": ("p", 0), "parsable2": ("P", 0),
    "users": ("u", 1), "Users": ("U", 0), "verbose": ("v", 0), "version": ("V", 0),
    "help": ("help", 0), "usage": ("usage", 0), "json": ("json", 2), "yaml": ("yaml", 2),
}
USAGE = "Usage: sshare [-h] [-u user_list] [-V] [--help] [--usage]\n"


def main(argv: list[str] | None = None) -> int:
    from plurm.common.cli import Usage, getopt_or_usage

    argv = sys.argv[1:] if argv is None else argv
    header = True
    user = None
    output = None  # --json/--yaml: a plurm.tools.dataparser.emit.Output
    try:
        pairs, _operands = getopt_or_usage("sshare", list(argv), _SHORT, _LONG)
    except Usage as exc:
        sys.stderr.write(exc.text)
        return exc.code
    for key, value in pairs:
        if key == "h":
            header = False
        elif key == "u":
            user = value
        elif key == "V":
            from plurm import write_version   # without display

            write_version()  # stdout: Slurm's line; stderr: plurm's
            return 0
        elif key in ("help", "usage"):
            sys.stdout.write(USAGE)
            return 0
        elif key in ("json", "yaml"):
            from plurm.tools.dataparser.emit import OutputError, parse as parse_output

            try:
                output = parse_output("sshare", key, value)
            except OutputError as exc:
                (sys.stderr if exc.code else sys.stdout).write(exc.text)
                return exc.code
        # -a, -A, -e, -l, -m, -M, -n, -o, -p, -P, -U, -v: accepted, the layout is fixed
    from plurm.wire.client import ClientError, request

    try:
        reply = request("share_info", {})
    except ClientError as exc:
        print(f"sshare: error: {exc}", file=sys.stderr)
        return 1
    if output is not None:
        from plurm.tools.dataparser import emit, shares

        lines = [s for s in reply["shares"] if user is None or s["user"] is None or s["user"] == user]
        cluster = reply.get("cluster", "")
        emit.write(shares.shares_resp(lines, emit.meta("sshare", list(argv), output, cluster), cluster), output)
        return 0
    sys.stdout.write(render(reply["shares"], header, user=user))
    return 0


if __name__ == "__main__":
    sys.exit(main())
