"""sacctmgr: accounts, users and QOS for fair share and QOS priority (the subset plurm keeps).

    sacctmgr [-i] [-n] [-P|-p] add|create account NAME[,NAME] [Parent=P] [Description=D] [Organization=O] [Fairshare=N]
    sacctmgr [-i] add user NAME Account=A[,B] [DefaultAccount=A] [Fairshare=N] [AdminLevel=L]
    sacctmgr [-i] add qos NAME [Priority=N] [MaxJobsPerUser=N]
    sacctmgr [-i] modify account|user|qos [where] Name=X [Account=A] set Key=Value ...
        (a user's AdminLevel: None, Operator or Administrator; only Administrators give one)
    sacctmgr [-i] delete account|user|qos [where] Name=X
    sacctmgr show|list account|user|assoc|qos|cluster|tres
"""

from __future__ import annotations

import sys

ENTITIES = {"account": "account", "accounts": "account", "user": "user", "users": "user", "qos": "qos",
            "assoc": "assoc", "association": "assoc", "associations": "assoc",
            "cluster": "cluster", "clusters": "cluster", "tres": "tres"}
ACTIONS = {"add": "add", "create": "add", "modify": "modify", "update": "modify", "delete": "delete",
           "remove": "delete", "show": "show", "list": "show"}


# Each entity's columns: field name (lower case) -> (header, default width, value of a row).
_E = ""
_ASSOC_EMPTY = ("priority", "grpjobs", "grptres", "grpsubmit", "grpwall", "grptresmins", "maxjobs", "maxtres",
                "maxtrespernode", "maxsubmit", "maxwall", "maxtresmins", "defaultqos", "grptresrunmins")
COLUMNS: dict[str, dict[str, tuple[str, int, str]]] = {
    "user": {"user": ("User", 10, "user"), "defaultaccount": ("Def Acct", 10, "default_account"),
             "adminlevel": ("Admin", 9, "admin")},
    "account": {"account": ("Account", 10, "account"), "description": ("Descr", 20, "description"),
                "organization": ("Org", 20, "organization")},
    "assoc": {"cluster": ("Cluster", 10, "cluster"), "account": ("Account", 10, "account"),
              "user": ("User", 10, "user"), "partition": ("Partition", 10, "partition"),
              "fairshare": ("Share", 9, "shares"), "priority": ("Priority", 10, _E),
              "grpjobs": ("GrpJobs", 7, _E), "grptres": ("GrpTRES", 13, _E), "grpsubmit": ("GrpSubmit", 9, _E),
              "grpwall": ("GrpWall", 11, _E), "grptresmins": ("GrpTRESMins", 13, _E),
              "maxjobs": ("MaxJobs", 7, _E), "maxtres": ("MaxTRES", 13, _E),
              "maxtrespernode": ("MaxTRESPerNode", 14, _E), "maxsubmit": ("MaxSubmit", 9, _E),
              "maxwall": ("MaxWall", 11, _E), "maxtresmins": ("MaxTRESMins", 13, _E), "qos": ("QOS", 20, "qos"),
              "defaultqos": ("Def QOS", 9, _E), "grptresrunmins": ("GrpTRESRunMin", 13, _E)},
    "qos": {"name": ("Name", 10, "name"), "priority": ("Priority", 10, "priority"),
            "preempt": ("Preempt", 10, "preempt"), "preemptmode": ("PreemptMode", 11, "preempt_mode"),
            "maxjobspu": ("MaxJobsPU", 9, "max_jobs_per_user")},
}
DEFAULTS = {"user": ["user", "defaultaccount", "adminlevel"], "account": ["account", "description", "organization"],
            "assoc": ["cluster", "account", "user", "partition", "fairshare", *_ASSOC_EMPTY[:12], "qos",
                      "defaultqos", "grptresrunmins"],
            "qos": ["name", "priority", "preempt", "preemptmode", "maxjobspu"]}
# `show user -s` (withassoc): a user's columns, then its associations'
COLUMNS["assoc_user"] = {**COLUMNS["assoc"], **COLUMNS["user"]}
DEFAULTS["assoc_user"] = DEFAULTS["user"]
# sacctmgr's other spellings of a field (it matches names case-insensitively)
ALIASES = {"share": "fairshare", "shares": "fairshare", "defacct": "defaultaccount", "admin": "adminlevel",
           "descr": "description", "org": "organization", "maxjobsperuser": "maxjobspu", "defqos": "defaultqos",
           "names": "name"}


class FieldError(ValueError):
    pass


def parse_format(entity: str, text: str | None) -> list[tuple[str, int, bool]]:
    """``format=Account%20,user%-8``: (field, width, left-justified) per column."""
    if not text:
        return [(k, COLUMNS[entity][k][1], False) for k in DEFAULTS[entity]]
    out = []
    for item in (t for t in text.split(",") if t):
        name, _, width = item.partition("%")
        key = ALIASES.get(name.lower(), name.lower())
        if key not in COLUMNS[entity]:
            raise FieldError(f"Unknown field '{name}'")
        try:
            w = int(width) if width else COLUMNS[entity][key][1]
        except ValueError:
            raise FieldError(f"Unknown field '{item}'") from None
        out.append((key, abs(w), w < 0))
    return out


def _table(entity: str, columns: list[tuple[str, int, bool]], rows: list[dict], header: bool,
           parsable: str | None) -> str:
    spec = COLUMNS[entity]

    def value(row: dict, key: str) -> str:
        attr = spec[key][2]
        v = row.get(attr) if attr else None
        return "" if v is None else str(v)

    if parsable is not None:
        end = "|" if parsable == "p" else ""
        lines = (["|".join(spec[k][0] for k, _, _ in columns) + end] if header else [])
        lines += ["|".join(value(r, k) for k, _, _ in columns) + end for r in rows]
        return "".join(ln + "\n" for ln in lines)

    def cell(text: str, width: int, left: bool) -> str:
        text = text[:width - 1] + "+" if len(text) > width else text
        return text.ljust(width) if left else text.rjust(width)

    lines = []
    if header:
        lines.append(" ".join(cell(spec[k][0], w, left) for k, w, left in columns) + " ")
        lines.append(" ".join("-" * w for _, w, _ in columns) + " ")
    lines += [" ".join(cell(value(r, k), w, left) for k, w, left in columns) + " " for r in rows]
    return "".join(ln + "\n" for ln in lines)


def _assoc_rows(reply: dict) -> list[dict]:
    """Associations in the tree order sacctmgr lists them: an account, its users, its sub-accounts."""
    accounts = {a["account"]: a for a in reply["accounts"]}
    children: dict[str | None, list[str]] = {}
    for a in reply["accounts"]:
        children.setdefault(a.get("parent"), []).append(a["account"])
    users: dict[str, list[dict]] = {}
    for link in reply["links"]:
        users.setdefault(link["account"], []).append(link)
    rows: list[dict] = []

    def walk(name: str) -> None:
        base = {"cluster": reply["cluster"], "account": name, "qos": "normal"}
        rows.append({**base, "user": "", "shares": accounts[name].get("shares", 1)})
        rows.extend({**base, "user": link["user"], "shares": link["shares"]}
                    for link in sorted(users.get(name, []), key=lambda link: link["user"]))
        for child in sorted(children.get(name, [])):
            walk(child)

    for top in sorted(children.get(None, [])):
        walk(top)
    return rows


def _matches(row: dict, names: list[str], where: dict[str, str], name_key: str) -> bool:
    def allowed(key: str) -> list[str] | None:
        raw = where.get(key)
        return [v for v in raw.split(",") if v] if raw else None
    if names and str(row.get(name_key, "")) not in names:
        return False
    for key, attr in (("account", "account"), ("accounts", "account"), ("cluster", "cluster"),
                      ("clusters", "cluster"), ("parent", "parent")):
        want = allowed(key)
        if want is not None and str(row.get(attr, "")) not in want:
            return False
    return True


def show(entity: str, reply: dict, header: bool, parsable: str | None, names: list[str] | None = None,
         where: dict[str, str] | None = None, with_assoc: bool = False) -> str:
    """``sacctmgr show``: rows filtered by the where clause (names, account=, cluster=), in
    format= columns (Slurm's defaults otherwise)."""
    where = dict(where or {})
    fmt = where.pop("format", None)
    if entity == "user" and with_assoc and not fmt:
        fmt = ",".join(DEFAULTS["user"]) + ",cluster,account,partition,fairshare"
    if entity == "user" and with_assoc:
        base = {u["user"]: u for u in reply["users"]}
        rows = [{**base[r["user"]], **r} for r in _assoc_rows(reply) if r["user"] in base]
        spec_entity = "assoc_user"
        rows = [r for r in rows if _matches(r, names or [], where, "user")]
        rows.sort(key=lambda r: (r["user"], r["account"]))
        return _table(spec_entity, parse_format(spec_entity, fmt), rows, header, parsable)
    if entity == "account":
        rows, key = reply["accounts"], "account"
    elif entity == "user":
        rows, key = reply["users"], "user"
    elif entity == "qos":
        rows = [{**q, "preempt_mode": q.get("preempt_mode") or "cluster"} for q in reply["qos"]]
        key = "name"
    else:
        rows, key = _assoc_rows(reply), "user"
    rows = [r for r in rows if _matches(r, names or [], where, key)]
    return _table(entity, parse_format(entity, fmt), rows, header, parsable)


def _show_configured(entity: str, names: list[str], where: dict[str, str], header: bool,
                     parsable: str | None) -> int:
    """show cluster|tres: from the controller's configuration (plurm has no slurmdbd)."""
    from plurm.tools import sacctmgr_cluster as configured
    from plurm.wire.client import ClientError

    COLUMNS.setdefault("cluster", configured.CLUSTER_COLUMNS)
    COLUMNS.setdefault("tres", configured.TRES_COLUMNS)
    try:
        fmt, rows = configured.configured_rows(entity, names, where)
        sys.stdout.write(_table(entity, parse_format(entity, fmt), rows, header, parsable))
    except (configured.UnknownCondition, FieldError) as exc:
        print(exc, file=sys.stderr)
        return 1
    except ClientError as exc:
        print(f" {exc}", file=sys.stderr)
        return 1
    return 0


# what 22.05 says to `show`/`list` of an entity it does not know
_NO_ENTITY = ('No valid entity in list command\n'
              'Input line must include "Account", "Association", "Cluster", "Configuration",\n'
              '"Event", "Federation", "Problem", "QOS", "Resource", "Reservation",\n'
              '"RunAwayJobs", "Stats", "Transaction", "TRES", "User", or "WCKey"')


class CommandError(ValueError):
    """A command line sacctmgr refuses: ``str()`` is the whole message, as printed."""


def parse(words: list[str]) -> tuple[str, str, list[str], dict[str, str], dict[str, str]]:
    if not words:
        raise ValueError("No command given")
    action = ACTIONS.get(words[0].lower())
    if action is None:
        raise CommandError(f"invalid keyword: {words[0]}")
    if len(words) < 2:
        raise ValueError(f"Unknown option: {words[0]}")
    entity = ENTITIES.get(words[1].lower())
    if entity is None and action == "show":
        raise CommandError(_NO_ENTITY)
    if entity is None:
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


# sacctmgr's getopt table (--usage is --help); options may follow the command's words
# (22.05 reads `show qos -n format=name` with -n)
_SHORT = "hinoPpQrsvV"
_LONG = {
    "help": ("h", 0), "usage": ("h", 0), "immediate": ("i", 0), "noheader": ("n", 0),
    "oneliner": ("o", 0), "parsable": ("p", 0), "parsable2": ("P", 0), "quiet": ("Q", 0),
    "readonly": ("r", 0), "associations": ("s", 0), "verbose": ("v", 0), "version": ("V", 0),
}


def main(argv: list[str] | None = None) -> int:
    from plurm.common.cli import OptionError, getopt_long, try_help

    argv = sys.argv[1:] if argv is None else argv
    header, parsable, with_assoc = True, None, False
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
            from plurm.tools.sacctmgr_help import HELP_TEXT

            sys.stdout.write(HELP_TEXT)
            return 0
        elif key == "V":
            from plurm import write_version   # without display

            write_version()  # stdout: Slurm's line; stderr: plurm's
            return 0
        elif key == "s":
            with_assoc = True
        # -i (changes are always immediate), -o, -Q, -r, -v: nothing to do
    if any(w.lower() in ("withassoc", "withassocs") for w in words):
        with_assoc = True
        words = [w for w in words if w.lower() not in ("withassoc", "withassocs")]
    if not words:
        return _interactive([a for a in argv if a.startswith("-")])
    if len(words) == 1 and words[0].lower() == "help":
        from plurm.tools.sacctmgr_help import HELP_TEXT

        sys.stdout.write(HELP_TEXT)
        return 0
    if len(words) == 1 and words[0].lower() in ("exit", "quit"):
        return 0
    try:
        action, entity, names, fields, where = parse(words)
        if action == "show":
            where = {**fields, **where}
    except CommandError as exc:
        print(exc, file=sys.stderr)
        return 1
    except ValueError as exc:
        print(f" {exc}", file=sys.stderr)
        return 1
    if entity in ("cluster", "tres"):
        if action != "show":  # plurm has the one cluster and a fixed TRES table
            print(f" Unknown option: {' '.join(words[:2])}", file=sys.stderr)
            return 1
        return _show_configured(entity, names, where, header, parsable)
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
        try:
            sys.stdout.write(show(entity, reply, header, parsable, names, where, with_assoc))
        except FieldError as exc:
            print(f"{exc}", file=sys.stderr)
            return 1
    elif action == "add":
        print(_adding(entity, names), end="")
    elif action == "modify":
        print(f" Modified {entity}s...\n" + "".join(f"  {n}\n" for n in names), end="")
    else:
        print(f" Deleting {entity}s...\n" + "".join(f"  {n}\n" for n in names), end="")
    return 0


def _interactive(options: list[str]) -> int:
    """No command: read commands from stdin after Slurm's prompt, one a line, with the
    command line's options; at the end of input a newline ends the prompt (as 22.05)."""
    import shlex

    rc = 0
    while True:
        sys.stdout.write("sacctmgr: ")
        sys.stdout.flush()
        line = sys.stdin.readline()
        if not line:
            sys.stdout.write("\n")
            return rc
        try:
            words = shlex.split(line)
        except ValueError as exc:
            print(f" {exc}", file=sys.stderr)
            rc = 1
            continue
        if words and words[0].lower() in ("exit", "quit"):
            return rc
        if words:
            rc = main(options + words)


if __name__ == "__main__":
    sys.exit(main())
