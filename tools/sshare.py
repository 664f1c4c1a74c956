"""sshare: shares, usage and Fair Tree fair share factors of the associations."""

from __future__ import annotations

import sys

# sshare's columns: (name, width); Account is left-justified, the rest right (22.05).
FIELDS = {"account": ("Account", 20), "user": ("User", 10), "rawshares": ("RawShares", 10),
          "normshares": ("NormShares", 11), "rawusage": ("RawUsage", 11), "normusage": ("NormUsage", 11),
          "effectvusage": ("EffectvUsage", 13), "fairshare": ("FairShare", 10), "levelfs": ("LevelFS", 10),
          "grptresmins": ("GrpTRESMins", 30), "tresrunmins": ("TRESRunMins", 30)}
DEFAULT = ("account", "user", "rawshares", "normshares", "rawusage", "effectvusage", "fairshare")
LONG = ("account", "user", "rawshares", "normshares", "rawusage", "normusage", "effectvusage", "fairshare",
        "levelfs", "grptresmins", "tresrunmins")
# An association's running TRES minutes with accounting's default TRES, none running (the
# controller sends each line's own, tres_run_mins; this is for a controller that does not).
_TRES_RUN = "cpu=0,mem=0,energy=0,node=0,billing=0,fs/disk=0,vmem=0,pages=0"
HEADER = ("Account                    User  RawShares  NormShares    RawUsage  EffectvUsage  FairShare \n"
          "-------------------- ---------- ---------- ----------- ----------- ------------- ---------- \n")


class FieldError(ValueError):
    pass


def parse_fields(text: str) -> list[tuple[str, int]]:
    """``-o Account,User%12``: sshare's field names in any case, each with an optional width."""
    out = []
    for item in (t for t in text.split(",") if t):
        name, _, width = item.partition("%")
        key = name.strip().lower()
        if key not in FIELDS:
            raise FieldError(f"Invalid field requested: \"{name}\"")
        try:
            out.append((key, int(width) if width else FIELDS[key][1]))
        except ValueError:
            raise FieldError(f"Invalid field requested: \"{item}\"") from None
    return out


def _values(line: dict, total_usage: float, indent: int, flat: bool) -> dict[str, str]:
    is_root = line["account"] == "root" and line["user"] is None
    eff = line["effective_usage"]
    level_fs = "" if is_root else ("inf" if not eff else f"{line['norm_shares'] / eff:.6f}")
    return {
        "account": ("" if flat else " " * indent) + line["account"],
        "user": line["user"] or "",
        "rawshares": "" if is_root else str(line["raw_shares"]),
        "normshares": f"{0.0 if is_root else line['norm_shares']:.6f}",
        "rawusage": str(line["raw_usage"]),
        "normusage": "" if is_root else f"{line['raw_usage'] / total_usage if total_usage else 0.0:.6f}",
        "effectvusage": f"{eff:.6f}",
        "fairshare": "" if line["user"] is None else f"{line['fairshare']:.6f}",
        "levelfs": level_fs,
        "grptresmins": "",
        "tresrunmins": ",".join(f"{k}={v}" for k, v in line["tres_run_mins"].items())
        if line.get("tres_run_mins") else _TRES_RUN,
    }


def select(shares: list[dict], users: list[str] | None = None, accounts: list[str] | None = None,
           users_only: bool = False) -> list[tuple[dict, int]]:
    """The lines sshare prints, each with its indent: ``-u`` keeps those users' lines (and
    the accounts), ``-A`` the accounts' subtrees (indented from them), ``-U`` user lines only."""
    out: list[tuple[dict, int]] = []
    keep_depth: int | None = None
    for line in shares:
        depth = line.get("depth", 0)
        base = 0
        if accounts:
            if line["user"] is None and line["account"] in accounts:
                keep_depth = depth
            elif keep_depth is not None and (depth <= keep_depth):
                keep_depth = None
            if keep_depth is None:
                continue
            base = keep_depth
        if line["user"] is not None and users and line["user"] not in users:
            continue
        if users_only and line["user"] is None:
            continue
        out.append((line, depth - base))
    return out


def render(shares: list[dict], header: bool = True, user: str | None = None, *,
           users: list[str] | None = None, accounts: list[str] | None = None, users_only: bool = False,
           fields: list[tuple[str, int]] | None = None, parsable: str | None = None) -> str:
    """Slurm's layout: accounts indented by their depth, users under them with their factor."""
    fields = fields or [(k, FIELDS[k][1]) for k in DEFAULT]
    users = users or ([user] if user else None)
    root_usage = next((ln["raw_usage"] for ln in shares if ln["account"] == "root" and ln["user"] is None), 0)
    rows = [_values(line, root_usage, indent, users_only)
            for line, indent in select(shares, users, accounts, users_only)]
    if parsable is not None:
        end = "|" if parsable == "p" else ""
        lines = ["|".join(FIELDS[k][0] for k, _ in fields) + end] if header else []
        lines += ["|".join(row[k] for k, _ in fields) + end for row in rows]
        return "".join(ln + "\n" for ln in lines)

    def cell(key: str, text: str, width: int) -> str:
        if len(text) > width:
            text = text[:width - 1] + "+"
        return text.ljust(width) if key == "account" else text.rjust(width)

    out = []
    if header:
        out.append(" ".join(cell(k, FIELDS[k][0], w) for k, w in fields) + " \n")
        out.append(" ".join("-" * w for _, w in fields) + " \n")
    out += [" ".join(cell(k, row[k], w) for k, w in fields) + " \n" for row in rows]
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
# -e/--helpformat: the fields -o takes, as 22.05 lists them (four to a line, 17 wide)
_HELP_FIELDS = ("Account", "Cluster", "EffectvUsage", "FairShare", "GrpTRESMins", "GrpTRESRaw", "ID",
                "LevelFS", "NormShares", "NormUsage", "Partition", "RawShares", "RawUsage",
                "TRESRunMins", "User")
HELPFORMAT = "".join(f"{name:<17}" + ("\n" if i % 4 == 3 or i == len(_HELP_FIELDS) - 1 else " ")
                     for i, name in enumerate(_HELP_FIELDS))


def main(argv: list[str] | None = None) -> int:
    from plurm.common.cli import Usage, getopt_or_usage

    argv = sys.argv[1:] if argv is None else argv
    header = True
    user = None
    users: list[str] | None = None
    accounts: list[str] | None = None
    users_only = False
    fields: list[tuple[str, int]] | None = None
    parsable: str | None = None
    long = False
    output = None  # --json/--yaml: a plurm.tools.dataparser.emit.Output
    try:
        pairs, _operands = getopt_or_usage("sshare", list(argv), _SHORT, _LONG)
    except Usage as exc:
        sys.stderr.write(exc.text)
        return exc.code
    for key, value in pairs:
        if key in ("h", "n"):  # 22.05: both omit the header (its --help names -n --noheader)
            header = False
        elif key == "u":
            users = [u for u in value.split(",") if u]
            user = users[0] if len(users) == 1 else None
        elif key == "A":
            accounts = [a for a in value.split(",") if a]
        elif key == "U":
            users_only = True
        elif key == "l":
            long = True
        elif key in ("P", "p"):
            parsable = key
        elif key == "o":
            try:
                fields = parse_fields(value)
            except FieldError as exc:
                print(f"sshare: error: {exc}", file=sys.stderr)
                return 1
        elif key == "V":
            from plurm import write_version   # without display

            write_version()  # stdout: Slurm's line; stderr: plurm's
            return 0
        elif key in ("help", "usage"):
            from plurm.tools.sshare_help import HELP_TEXT

            sys.stdout.write(HELP_TEXT)  # 22.05 prints its help for both
            return 0
        elif key == "e":
            sys.stdout.write(HELPFORMAT)
            return 0
        elif key in ("json", "yaml"):
            from plurm.tools.dataparser.emit import OutputError, parse as parse_output

            try:
                output = parse_output("sshare", key, value)
            except OutputError as exc:
                (sys.stderr if exc.code else sys.stdout).write(exc.text)
                return exc.code
        # -a (every user: root sees them all already), -m, -M, -n, -v: accepted
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
    if fields is None and long:
        fields = [(k, FIELDS[k][1]) for k in LONG]
    sys.stdout.write(render(reply["shares"], header, users=users, accounts=accounts, users_only=users_only,
                            fields=fields, parsable=parsable))
    return 0


if __name__ == "__main__":
    sys.exit(main())
