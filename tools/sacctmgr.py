"""sacctmgr: accounts, users and QOS for fair share and QOS priority (the subset plurm keeps).

    sacctmgr [-i] [-n] [-P|-p] add|create account NAME[,NAME] [Parent=P] [Description=D] [Organization=O] [Fairshare=N]
    sacctmgr [-i] add user NAME Account=A[,B] [DefaultAccount=A] [Fairshare=N] [AdminLevel=L]
    sacctmgr [-i] add qos NAME [Priority=N] [MaxJobsPerUser=N]
    sacctmgr [-i] modify account|user|qos [where] Name=X [Account=A] set Key=Value ...
        (a user's AdminLevel: None, Operator or Administrator; only Administrators give one)
    sacctmgr [-i] delete account|user|qos [where] Name=X
    sacctmgr show|list account|user|assoc|qos
"""

from __future__ import annotations

import sys

ENTITIES = {"account": "account", "accounts": "account", "user": "user", "users": "user", "qos": "qos",
            "assoc": "assoc", "association": "assoc", "associations": "assoc"}
ACTIONS = {"add": "add", "create": "add", "modify": "modify", "update": "modify", "delete": "delete",
           "remove": "delete", "show": "show", "list": "show"}


def _table(headers: list[tuple[str, int]], rows: list[list[str]], header: bool, parsable: str | None) -> str:
    if parsable is not None:
        end = "|" if parsable == "p" else ""
        lines = (["|".join(h for h, _ in headers) + end] if header else [])
        lines += ["|".join(row) + end for row in rows]
        return "\n".join(lines) + "\n" if lines else ""
    def cell(text: str, width: int) -> str:
        return (text[:width - 1] + "+" if len(text) > width else text).rjust(width)
    lines = []
    if header:
        lines.append(" ".join(cell(h, w) for h, w in headers) + " ")
        lines.append(" ".join("-" * w for _, w in headers) + " ")
    lines += [" ".join(cell(v, w) for v, (_, w) in zip(row, headers)) + " " for row in rows]
    return "\n".join(lines) + "\n"


def show(entity: str, reply: dict, header: bool, parsable: str | None) -> str:
    if entity == "account":
        return _table([("Account", 10), ("Descr", 20), ("Org", 20)],
                      [[a["account"], a["description"] or "", a["organization"] or ""] for a in reply["accounts"]],
                      header, parsable)
    if entity == "user":
        return _table([("User", 10), ("Def Acct", 10), ("Admin", 9)],
                      [[u["user"], u["default_account"], u["admin"]] for u in reply["users"]], header, parsable)
    if entity == "qos":
        return _table([("Name", 10), ("Priority", 10), ("Preempt", 10), ("PreemptMode", 11), ("MaxJobsPU", 9)],
                      [[q["name"], str(q["priority"]), q.get("preempt") or "", q.get("preempt_mode") or "cluster",
                        "" if q["max_jobs_per_user"] is None else str(q["max_jobs_per_user"])] for q in reply["qos"]],
                      header, parsable)
    rows = [[reply["cluster"], a["account"], "", "", str(a["shares"])] for a in reply["accounts"]]
    rows += [[reply["cluster"], link["account"], link["user"], "", str(link["shares"])] for link in reply["links"]]
    rows.sort(key=lambda r: (r[1], r[2]))
    return _table([("Cluster", 10), ("Account", 10), ("User", 10), ("Partition", 10), ("Share", 9)], rows,
                  header, parsable)


def parse(words: list[str]) -> tuple[str, str, list[str], dict[str, str], dict[str, str]]:
    if len(words) < 2:
        raise ValueError("No command given" if not words else f"Unknown option: {words[0]}")
    action = ACTIONS.get(words[0].lower())
    entity = ENTITIES.get(words[1].lower())
    if action is None or entity is None:
        raise ValueError(f"Unknown option: {' '.join(words[:2])}")
    names: list[str] = []
    fields: dict[str, str] = {}
    where: dict[str, str] = {}
    target = fields if action == "add" else where
    for word in words[2:]:
        lowered = word.lower()
        if lowered == "where":
            target = where
            continue
        if lowered == "set":
            target = fields
            continue
        key, sep, value = word.partition("=")
        if not sep:
            names.extend(n for n in word.split(",") if n)
        elif key.lower() in ("name", "names", "user", "users") and target is where:
            names.extend(n for n in value.split(",") if n)
        else:
            target[key.lower()] = value
    if action != "show" and not names:
        raise ValueError(f"No {entity} name given")
    return action, entity, names, fields, where


def _adding(entity: str, names: list[str]) -> str:
    label = {"account": "Account(s)", "user": "User(s)", "qos": "QOS(s)"}.get(entity, "Account(s)")
    return f" Adding {label}\n" + "".join(f"  {n}\n" for n in names)


def _refused(action: str, entity: str, names: list[str], exc) -> int:
    """A change the controller refused, in Slurm's words: the reason first (when it gave
    one), then sacctmgr's line for the action (an add lists what it would have added)."""
    if exc.detail:
        print(f"sacctmgr: error: {exc.detail}", file=sys.stderr)
    if action == "add":
        sys.stdout.write(_adding(entity, names))
        what = {"account": "accounts", "user": "users", "qos": "QOS"}.get(entity, "accounts")
        print(f" Problem adding {what}: {exc}", file=sys.stderr)
    elif action == "show":
        print(" Problem with query.", file=sys.stderr)
    else:
        print(f" Error with request: {exc}", file=sys.stderr)
    return 1


# sacctmgr's getopt table (--usage is --help); '+' because, like Slurm's, sacctmgr stops
# reading options at the first word of the command
_SHORT = "+hinoPpQrsvV"
_LONG = {
    "help": ("h", 0), "usage": ("h", 0), "immediate": ("i", 0), "noheader": ("n", 0),
    "oneliner": ("o", 0), "parsable": ("p", 0), "parsable2": ("P", 0), "quiet": ("Q", 0),
    "readonly": ("r", 0), "associations": ("s", 0), "verbose": ("v", 0), "version": ("V", 0),
}


def main(argv: list[str] | None = None) -> int:
    from plurm.common.cli import OptionError, getopt_long, try_help

    argv = sys.argv[1:] if argv is None else argv
    header, parsable = True, None
    try:
        pairs, words = getopt_long("sacctmgr", list(argv), _SHORT, _LONG)
    except OptionError as exc:
        print(f"{exc.message}\n{try_help('sacctmgr')}", file=sys.stderr)
        return 1
    for key, _ in pairs:
        if key == "n":
            header = False
        elif key == "P":
            parsable = "P"
        elif key == "p":
            parsable = "p"
        elif key == "h":
            print(__doc__.strip())
            return 0
        elif key == "V":
            from plurm import write_version   # without display

            write_version()  # stdout: Slurm's line; stderr: plurm's
            return 0
        # -i (changes are always immediate), -o, -Q, -r, -s, -v: nothing to do
    try:
        action, entity, names, fields, where = parse(words)
    except ValueError as exc:
        print(f" {exc}", file=sys.stderr)
        return 1
    from plurm.wire.client import ClientError, request

    body = {"action": action, "entity": "account" if entity == "assoc" and action != "show" else entity,
            "names": names, "fields": fields, "where": where}
    try:
        reply = request("acctmgr", body)
    except ClientError as exc:
        if exc.code in ("AccessDenied", "InvalidUserId"):
            return _refused(action, entity, names, exc)
        print(f" {exc}", file=sys.stderr)
        return 1
    if action == "show":
        sys.stdout.write(show(entity, reply, header, parsable))
    elif action == "add":
        print(_adding(entity, names), end="")
    elif action == "modify":
        print(f" Modified {entity}s...\n" + "".join(f"  {n}\n" for n in names), end="")
    else:
        print(f" Deleting {entity}s...\n" + "".join(f"  {n}\n" for n in names), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
