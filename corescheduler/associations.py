"""Accounts, users, QOS and their usage: the association store, and Fair Tree fair share.

What Slurm keeps in slurmdbd and administrators fill with ``sacctmgr``, plurm keeps
in the controller's state store (same SQLite database, same transactions).  Usage
is CPU-seconds per (account, user), decayed with PriorityDecayHalfLife.

Fair Tree (Slurm's default fair-share algorithm): at every level of the account
tree, siblings are ordered by their level fair share, LF = S / U (S: their shares
over their siblings' shares; U: their usage over their siblings' usage; no usage
ranks first); a depth-first walk in that order ranks the users, and a user's fair
share factor is (number of users - rank) / number of users, ties sharing a rank.
"""

from __future__ import annotations

import math
import sqlite3
import time
from dataclasses import dataclass

_SCHEMA = """
CREATE TABLE IF NOT EXISTS assoc_accounts (name TEXT PRIMARY KEY, parent TEXT, description TEXT,
                                           organization TEXT, shares INTEGER NOT NULL DEFAULT 1);
CREATE TABLE IF NOT EXISTS assoc_users (name TEXT PRIMARY KEY, default_account TEXT NOT NULL,
                                        admin TEXT NOT NULL DEFAULT 'None');
CREATE TABLE IF NOT EXISTS assoc_links (account TEXT NOT NULL, user TEXT NOT NULL,
                                        shares INTEGER NOT NULL DEFAULT 1, usage REAL NOT NULL DEFAULT 0,
                                        decayed_at REAL NOT NULL DEFAULT 0, PRIMARY KEY (account, user));
CREATE TABLE IF NOT EXISTS assoc_qos (name TEXT PRIMARY KEY, description TEXT,
                                      priority INTEGER NOT NULL DEFAULT 0, max_jobs_per_user INTEGER,
                                      preempt TEXT NOT NULL DEFAULT '', preempt_mode TEXT);
"""


class AssociationError(ValueError):
    pass


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


class AssociationStore:
    def __init__(self, db: sqlite3.Connection, half_life_s: float = 7 * 86400) -> None:
        self.db = db
        self.half_life_s = half_life_s
        db.executescript(_SCHEMA)
        if db.execute("SELECT 1 FROM assoc_accounts WHERE name='root'").fetchone() is None:
            db.execute("INSERT INTO assoc_accounts (name, parent, description, organization) "
                       "VALUES ('root', NULL, 'default root account', 'root')")
        db.execute("INSERT OR IGNORE INTO assoc_qos (name, description) VALUES ('normal', 'Normal QOS default')")
        self._factors: dict[tuple[str, str], float] | None = None
        self._defaults: dict[str, str] = {}

    # -- administration (sacctmgr)
    def add_account(self, name: str, parent: str = "root", description: str | None = None,
                    organization: str | None = None, shares: int = 1) -> None:
        if self._account(name) is not None:
            raise AssociationError(f"Already existing account {name}")
        if self._account(parent) is None:
            raise AssociationError(f"Parent account {parent} doesn't exist.")
        if organization is None:
            # Slurm's default: the parent's organization, or the account's own name under root.
            organization = name if parent == "root" else (self._account(parent) or (None,) * 4)[3]
        self.db.execute("INSERT INTO assoc_accounts VALUES (?, ?, ?, ?, ?)",
                        (name, parent, description or name, organization, shares))
        self._factors = None

    def add_user(self, name: str, account: str, default_account: str | None = None, shares: int = 1) -> None:
        if self._account(account) is None:
            raise AssociationError(f"Account {account} doesn't exist.")
        if self.db.execute("SELECT 1 FROM assoc_links WHERE account=? AND user=?", (account, name)).fetchone():
            raise AssociationError(f"User {name} already has an association with account {account}")
        self.db.execute("INSERT OR IGNORE INTO assoc_users (name, default_account) VALUES (?, ?)",
                        (name, default_account or account))
        self.db.execute("INSERT INTO assoc_links (account, user, shares, decayed_at) VALUES (?, ?, ?, ?)",
                        (account, name, shares, time.time()))
        self._factors = None

    def add_qos(self, name: str, priority: int = 0, max_jobs_per_user: int | None = None, preempt: str = "",
                preempt_mode: str | None = None) -> None:
        if self.db.execute("SELECT 1 FROM assoc_qos WHERE name=?", (name,)).fetchone():
            raise AssociationError(f"Already existing QOS {name}")
        self.db.execute("INSERT INTO assoc_qos (name, priority, max_jobs_per_user, preempt, preempt_mode) "
                        "VALUES (?, ?, ?, ?, ?)", (name, priority, max_jobs_per_user, preempt, preempt_mode))

    def modify(self, entity: str, name: str, fields: dict[str, str], account: str | None = None) -> None:
        columns = {"account": {"fairshare": "shares", "description": "description", "organization": "organization",
                               "parent": "parent"},
                   "user": {"fairshare": "shares", "defaultaccount": "default_account", "adminlevel": "admin"},
                   "qos": {"priority": "priority", "maxjobsperuser": "max_jobs_per_user",
                           "description": "description", "preempt": "preempt",
                           "preemptmode": "preempt_mode"}}[entity]
        for key, value in fields.items():
            column = columns.get(key.lower())
            if column is None:
                raise AssociationError(f"Unknown option: {key}")
            if entity == "user" and column == "shares":
                where, params = ("user=?", [name]) if account is None else ("user=? AND account=?", [name, account])
                self.db.execute(f"UPDATE assoc_links SET shares=? WHERE {where}", [int(value), *params])
            elif entity == "user":
                self.db.execute(f"UPDATE assoc_users SET {column}=? WHERE name=?", (value, name))
            elif entity == "account":
                self.db.execute(f"UPDATE assoc_accounts SET {column}=? WHERE name=?", (value, name))
            else:
                self.db.execute(f"UPDATE assoc_qos SET {column}=? WHERE name=?", (value, name))
        self._factors = None

    def delete(self, entity: str, name: str) -> None:
        if entity == "user":
            self.db.execute("DELETE FROM assoc_links WHERE user=?", (name,))
            self.db.execute("DELETE FROM assoc_users WHERE name=?", (name,))
        elif entity == "account":
            if name == "root":
                raise AssociationError("You can't delete the root account")
            self.db.execute("DELETE FROM assoc_links WHERE account=?", (name,))
            self.db.execute("DELETE FROM assoc_accounts WHERE name=?", (name,))
        else:
            self.db.execute("DELETE FROM assoc_qos WHERE name=?", (name,))
        self._factors = None

    # -- queries
    def _account(self, name: str) -> tuple | None:
        return self.db.execute("SELECT * FROM assoc_accounts WHERE name=?", (name,)).fetchone()

    def accounts(self) -> list[dict]:
        return [{"account": r[0], "parent": r[1], "description": r[2], "organization": r[3], "shares": r[4]}
                for r in self.db.execute("SELECT * FROM assoc_accounts ORDER BY name")]

    def users(self) -> list[dict]:
        return [{"user": r[0], "default_account": r[1], "admin": r[2]}
                for r in self.db.execute("SELECT * FROM assoc_users ORDER BY name")]

    def qos(self) -> list[dict]:
        return [{"name": r[0], "description": r[1] or "", "priority": r[2], "max_jobs_per_user": r[3],
                 "preempt": r[4], "preempt_mode": r[5]}
                for r in self.db.execute("SELECT name, description, priority, max_jobs_per_user, preempt, preempt_mode "
                                         "FROM assoc_qos ORDER BY name")]

    def qos_preempts(self) -> dict[str, set[str]]:
        """QOS name -> the QOS names its jobs may preempt (sacctmgr ... set Preempt=a,b)."""
        return {r[0]: {q for q in (r[1] or "").split(",") if q}
                for r in self.db.execute("SELECT name, preempt FROM assoc_qos")}

    def qos_preempt_mode(self, name: str | None) -> str | None:
        row = self.db.execute("SELECT preempt_mode FROM assoc_qos WHERE name=?", (name or "normal",)).fetchone()
        return row[0] if row and row[0] else None

    def links(self) -> list[dict]:
        return [{"account": r[0], "user": r[1], "shares": r[2], "usage": r[3]}
                for r in self.db.execute("SELECT account, user, shares, usage FROM assoc_links ORDER BY account, user")]

    def default_account(self, user: str) -> str | None:
        row = self.db.execute("SELECT default_account FROM assoc_users WHERE name=?", (user,)).fetchone()
        return row[0] if row else None

    def has_association(self, user: str, account: str) -> bool:
        return self.db.execute("SELECT 1 FROM assoc_links WHERE user=? AND account=?", (user, account)).fetchone() \
            is not None

    def qos_limits(self) -> dict[str, int]:
        """MaxJobsPerUser of each QOS that has one."""
        return {r[0]: r[1] for r in self.db.execute(
            "SELECT name, max_jobs_per_user FROM assoc_qos WHERE max_jobs_per_user IS NOT NULL")}

    def qos_priority(self, name: str | None) -> float:
        """The QOS factor: its priority over the largest QOS priority."""
        rows = dict(self.db.execute("SELECT name, priority FROM assoc_qos"))
        top = max(rows.values(), default=0)
        return rows.get(name or "normal", 0) / top if top else 0.0

    # -- usage
    def add_usage(self, account: str, user: str, cpu_seconds: float, now: float) -> None:
        row = self.db.execute("SELECT usage, decayed_at FROM assoc_links WHERE account=? AND user=?",
                              (account, user)).fetchone()
        if row is None:
            return
        usage, since = row
        decayed = usage * self._decay(now - since)
        self.db.execute("UPDATE assoc_links SET usage=?, decayed_at=? WHERE account=? AND user=?",
                        (decayed + cpu_seconds, now, account, user))
        self._factors = None

    def _decay(self, seconds: float) -> float:
        if self.half_life_s <= 0 or seconds <= 0:
            return 1.0
        return 0.5 ** (seconds / self.half_life_s)

    # -- Fair Tree
    def shares(self, now: float | None = None) -> list[Share]:
        """sshare's lines, in tree order, with each user's fair share factor."""
        now = time.time() if now is None else now
        accounts = {a["account"]: a for a in self.accounts()}
        children: dict[str, list[str]] = {}
        for name, acct in accounts.items():
            if acct["parent"]:
                children.setdefault(acct["parent"], []).append(name)
        user_links: dict[str, list[dict]] = {}
        for link in self.links():
            row = self.db.execute("SELECT decayed_at FROM assoc_links WHERE account=? AND user=?",
                                  (link["account"], link["user"])).fetchone()
            link["usage"] = link["usage"] * self._decay(now - (row[0] if row else now))
            user_links.setdefault(link["account"], []).append(link)

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
