"""Accounts, users, QOS and their usage: the association store, and Fair Tree fair share.

What Slurm keeps in slurmdbd and administrators fill with ``sacctmgr``, the core keeps
in memory as an ``AccountBook``: plain records, no I/O.  The controller loads the book
from its state store at start and writes it back (same SQLite transaction as the
jobs) whenever ``dirty`` is set.  Usage is CPU-seconds per (account, user), decayed
with PriorityDecayHalfLife.

Fair Tree (Slurm's default fair-share algorithm): at every level of the account
tree, siblings are ordered by their level fair share, LF = S / U (S: their shares
over their siblings' shares; U: their usage over their siblings' usage; no usage
ranks first); a depth-first walk in that order ranks the users, and a user's fair
share factor is (number of users - rank) / number of users, ties sharing a rank.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

# sacctmgr's AdminLevel, lowest first (the index is the level): an Operator may act on every
# job and add or change any database object; an Administrator may also do everything on the
# controller that root and SlurmUser may (node updates, reconfiguration).
ADMIN_NONE, ADMIN_OPERATOR, ADMIN_SUPER = 0, 1, 2
ADMIN_LEVELS = ("None", "Operator", "Administrator")


class AssociationError(ValueError):
    pass


def parse_admin_level(text: str) -> str:
    """An AdminLevel value as sacctmgr reads it: by its first letter, in any case
    (SuperUser and Admin are Administrator); the name as shown."""
    first = text.strip()[:1].lower()
    for letter, name in (("a", "Administrator"), ("s", "Administrator"), ("o", "Operator"), ("n", "None")):
        if first == letter:
            return name
    raise AssociationError(f"Invalid AdminLevel: {text}")


@dataclass
class Share:
    """One sshare line."""

    account: str
    user: str | None
    raw_shares: int
    norm_shares: float
    raw_usage: int
    effective_usage: float
    fairshare: float | None  # users only
    depth: int = 0  # in the account tree (sshare indents by it)


@dataclass
class Account:
    name: str
    parent: str | None
    description: str
    organization: str
    shares: int = 1


@dataclass
class User:
    name: str
    default_account: str
    admin: str = "None"


@dataclass
class Link:
    """An association: a user in an account, with its shares and decayed usage."""

    account: str
    user: str
    shares: int = 1
    usage: float = 0.0
    decayed_at: float = 0.0


@dataclass
class Qos:
    name: str
    description: str = ""
    priority: int = 0
    max_jobs_per_user: int | None = None
    preempt: str = ""
    preempt_mode: str | None = None


@dataclass
class AccountBook:
    """Accounts, users, their associations and QOS, in memory; sacctmgr's semantics."""

    half_life_s: float = 7 * 86400
    accounts_by_name: dict[str, Account] = field(default_factory=dict)
    users_by_name: dict[str, User] = field(default_factory=dict)
    links_by_key: dict[tuple[str, str], Link] = field(default_factory=dict)
    qos_by_name: dict[str, Qos] = field(default_factory=dict)
    # The time the core last told the book (the core passes its clock in: no time.time()).
    now: float = 0.0
    dirty: bool = False  # changed since the controller last wrote the book

    def __post_init__(self) -> None:
        self.accounts_by_name.setdefault("root", Account("root", None, "default root account", "root"))
        self.qos_by_name.setdefault("normal", Qos("normal", "Normal QOS default"))
        self._factors: dict[tuple[str, str], float] | None = None
        self._defaults: dict[str, str] = {}

    def _changed(self) -> None:
        self._factors = None
        self.dirty = True

    # -- administration (sacctmgr)
    def add_account(self, name: str, parent: str = "root", description: str | None = None,
                    organization: str | None = None, shares: int = 1) -> None:
        if name in self.accounts_by_name:
            raise AssociationError(f"Already existing account {name}")
        if parent not in self.accounts_by_name:
            raise AssociationError(f"Parent account {parent} doesn't exist.")
        if organization is None:
            # Slurm's default: the parent's organization, or the account's own name under root.
            organization = name if parent == "root" else self.accounts_by_name[parent].organization
        self.accounts_by_name[name] = Account(name, parent, description or name, organization, shares)
        self._changed()

    def add_user(self, name: str, account: str, default_account: str | None = None, shares: int = 1,
                 admin: str | None = None) -> None:
        if account not in self.accounts_by_name:
            raise AssociationError(f"Account {account} doesn't exist.")
        if (account, name) in self.links_by_key:
            raise AssociationError(f"User {name} already has an association with account {account}")
        user = self.users_by_name.setdefault(name, User(name, default_account or account))
        if admin is not None:
            user.admin = parse_admin_level(admin)
        self.links_by_key[(account, name)] = Link(account, name, shares, 0.0, self.now)
        self._changed()

    def add_qos(self, name: str, priority: int = 0, max_jobs_per_user: int | None = None, preempt: str = "",
                preempt_mode: str | None = None) -> None:
        if name in self.qos_by_name:
            raise AssociationError(f"Already existing QOS {name}")
        self.qos_by_name[name] = Qos(name, "", priority, max_jobs_per_user, preempt, preempt_mode)
        self._changed()

    # sacctmgr's option names -> the record attribute they set, per entity
    _MODIFIABLE = {"account": {"fairshare": "shares", "description": "description", "organization": "organization",
                               "parent": "parent"},
                   "user": {"fairshare": "shares", "defaultaccount": "default_account", "adminlevel": "admin"},
                   "qos": {"priority": "priority", "maxjobsperuser": "max_jobs_per_user",
                           "description": "description", "preempt": "preempt", "preemptmode": "preempt_mode"}}
    _INTEGER = {"shares", "priority", "max_jobs_per_user"}

    def modify(self, entity: str, name: str, fields: dict[str, str], account: str | None = None) -> None:
        columns = self._MODIFIABLE[entity]
        for key, value in fields.items():
            column = columns.get(key.lower())
            if column is None:
                raise AssociationError(f"Unknown option: {key}")
            typed: object = int(value) if column in self._INTEGER else value
            if column == "admin":
                typed = parse_admin_level(value)
            if entity == "user" and column == "shares":
                for link in self.links_by_key.values():
                    if link.user == name and (account is None or link.account == account):
                        link.shares = int(value)
            elif entity == "user":
                if name in self.users_by_name:
                    setattr(self.users_by_name[name], column, typed)
            elif entity == "account":
                if name in self.accounts_by_name:
                    setattr(self.accounts_by_name[name], column, typed)
            elif name in self.qos_by_name:
                setattr(self.qos_by_name[name], column, typed)
        self._changed()

    def delete(self, entity: str, name: str) -> None:
        if entity == "user":
            self.links_by_key = {k: v for k, v in self.links_by_key.items() if v.user != name}
            self.users_by_name.pop(name, None)
        elif entity == "account":
            if name == "root":
                raise AssociationError("You can't delete the root account")
            self.links_by_key = {k: v for k, v in self.links_by_key.items() if v.account != name}
            self.accounts_by_name.pop(name, None)
        else:
            self.qos_by_name.pop(name, None)
        self._changed()

    def delete_association(self, user: str, account: str) -> bool:
        """``sacctmgr delete user NAME account=A``: that one association, as 22.05.8 does it: the
        user goes with their last one, and losing the default account's leaves the default
        empty (checked on the anchor).  False when there was none."""
        if self.links_by_key.pop((account, user), None) is None:
            return False
        record = self.users_by_name.get(user)
        if not any(key[1] == user for key in self.links_by_key):
            self.users_by_name.pop(user, None)
        elif record is not None and record.default_account == account:
            record.default_account = ""
        self._changed()
        return True

    # -- queries
    def accounts(self) -> list[dict]:
        return [{"account": a.name, "parent": a.parent, "description": a.description,
                 "organization": a.organization, "shares": a.shares}
                for a in sorted(self.accounts_by_name.values(), key=lambda a: a.name)]

    def users(self) -> list[dict]:
        return [{"user": u.name, "default_account": u.default_account, "admin": u.admin}
                for u in sorted(self.users_by_name.values(), key=lambda u: u.name)]

    def qos(self) -> list[dict]:
        return [{"name": q.name, "description": q.description or "", "priority": q.priority,
                 "max_jobs_per_user": q.max_jobs_per_user, "preempt": q.preempt, "preempt_mode": q.preempt_mode}
                for q in sorted(self.qos_by_name.values(), key=lambda q: q.name)]

    def qos_preempts(self) -> dict[str, set[str]]:
        """QOS name -> the QOS names its jobs may preempt (sacctmgr ... set Preempt=a,b)."""
        return {q.name: {p for p in (q.preempt or "").split(",") if p} for q in self.qos_by_name.values()}

    def qos_preempt_mode(self, name: str | None) -> str | None:
        qos = self.qos_by_name.get(name or "normal")
        return qos.preempt_mode if qos and qos.preempt_mode else None

    def links(self) -> list[dict]:
        return [{"account": link.account, "user": link.user, "shares": link.shares, "usage": link.usage}
                for link in sorted(self.links_by_key.values(), key=lambda link: (link.account, link.user))]

    def admin_level(self, user: str) -> int:
        """The user's AdminLevel as a number (ADMIN_NONE for a user the book does not know)."""
        record = self.users_by_name.get(user)
        name = record.admin if record else "None"
        return ADMIN_LEVELS.index(name) if name in ADMIN_LEVELS else ADMIN_NONE

    def default_account(self, user: str) -> str | None:
        record = self.users_by_name.get(user)
        return record.default_account if record else None

    def has_association(self, user: str, account: str) -> bool:
        return (account, user) in self.links_by_key

    def qos_limits(self) -> dict[str, int]:
        """MaxJobsPerUser of each QOS that has one."""
        return {q.name: q.max_jobs_per_user for q in self.qos_by_name.values() if q.max_jobs_per_user is not None}

    def qos_priority(self, name: str | None) -> float:
        """The QOS factor: its priority over the largest QOS priority."""
        top = max((q.priority for q in self.qos_by_name.values()), default=0)
        qos = self.qos_by_name.get(name or "normal")
        return (qos.priority if qos else 0) / top if top else 0.0

    # -- usage
    def add_usage(self, account: str, user: str, cpu_seconds: float, now: float) -> None:
        link = self.links_by_key.get((account, user))
        if link is None:
            return
        link.usage = link.usage * self._decay(now - link.decayed_at) + cpu_seconds
        link.decayed_at = now
        self._changed()

    def _decay(self, seconds: float) -> float:
        if self.half_life_s <= 0 or seconds <= 0:
            return 1.0
        return 0.5 ** (seconds / self.half_life_s)

    # -- Fair Tree
    def shares(self, now: float | None = None) -> list[Share]:
        """sshare's lines, in tree order, with each user's fair share factor."""
        now = self.now if now is None else now
        accounts = {a["account"]: a for a in self.accounts()}
        children: dict[str, list[str]] = {}
        for name, acct in accounts.items():
            if acct["parent"]:
                children.setdefault(acct["parent"], []).append(name)
        user_links: dict[str, list[dict]] = {}
        for record in sorted(self.links_by_key.values(), key=lambda link: (link.account, link.user)):
            link = {"account": record.account, "user": record.user, "shares": record.shares,
                    "usage": record.usage * self._decay(now - record.decayed_at)}
            user_links.setdefault(record.account, []).append(link)

        def usage_of(account: str) -> float:
            return sum(link["usage"] for link in user_links.get(account, [])) + \
                sum(usage_of(c) for c in children.get(account, []))

        lines: list[Share] = []
        ranked: list[tuple[str, str]] = []

        def walk(account: str, depth: int) -> None:
            kids: list[tuple[str, str | None, int, float]] = []  # (account, user, shares, usage)
            kids += [(c, None, accounts[c]["shares"], usage_of(c)) for c in children.get(account, [])]
            kids += [(account, link["user"], link["shares"], link["usage"]) for link in user_links.get(account, [])]
            total_shares = sum(k[2] for k in kids) or 1
            total_usage = sum(k[3] for k in kids)

            def level_fs(kid: tuple) -> float:
                share = kid[2] / total_shares
                used = kid[3] / total_usage if total_usage else 0.0
                return math.inf if used == 0 else share / used

            for kid in sorted(kids, key=lambda k: (-level_fs(k), k[1] is not None, k[1] or k[0])):
                share = kid[2] / total_shares
                eff = kid[3] / total_usage if total_usage else 0.0
                if kid[1] is None:
                    lines.append(Share(kid[0], None, kid[2], share, int(kid[3]), eff, None, depth + 1))
                    walk(kid[0], depth + 1)
                else:
                    lines.append(Share(account, kid[1], kid[2], share, int(kid[3]), eff, 0.0, depth + 1))
                    ranked.append((account, kid[1]))

        lines.append(Share("root", None, 1, 1.0, int(usage_of("root")), 1.0, None))
        walk("root", 0)
        count = len(ranked)
        factors = {key: (count - i) / count for i, key in enumerate(ranked)} if count else {}
        for line in lines:
            if line.user is not None:
                line.fairshare = factors.get((line.account, line.user), 0.0)
        self._factors = factors
        self._defaults = {u["user"]: u["default_account"] for u in self.users()}
        return lines

    def fairshare(self, account: str | None, user: str) -> float:
        """The Fair Tree factor of a job's association (0 when it has none).

        Called for every pending job at each PriorityCalcPeriod: the factors and the
        users' default accounts are computed once and kept until something changes."""
        if self._factors is None:
            self.shares()
        account = account or self._defaults.get(user) or ""
        return (self._factors or {}).get((account, user), 0.0)
