"""``sacctmgr delete user NAME account=A`` in the book (corescheduler/accounts.py): that one
association goes, not the user; the user goes with their last one; losing the default
account's association leaves the default empty -- each as 22.05.8's sacctmgr did on the
anchor (``sacctmgr -i delete user ldu1 account=lda1``, then ``account=lda2``)."""

from __future__ import annotations

from plurm.corescheduler.accounts import AccountBook
from plurm.corescheduler.configure import core_from_conf
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.service import Service
from plurm.grammar.slurmconf import parse_slurm_conf_text
from plurm.wire import protocol


def _book() -> AccountBook:
    book = AccountBook()
    book.add_account("physics")
    book.add_account("optics")
    book.add_user("ann", "physics")
    book.add_user("ann", "optics")
    return book


def test_one_association_goes_the_user_stays() -> None:
    book = _book()
    assert book.delete_association("ann", "optics")
    assert [(link["user"], link["account"]) for link in book.links()] == [("ann", "physics")]
    assert [u["default_account"] for u in book.users()] == ["physics"]
    assert not book.delete_association("ann", "optics")  # (nothing left to delete)


def test_the_default_accounts_association_leaves_the_default_empty_the_last_the_user_gone() -> None:
    book = _book()
    book.delete_association("ann", "physics")
    assert book.users() == [{"user": "ann", "default_account": "", "admin": book.users()[0]["admin"]}]
    book.delete_association("ann", "optics")
    assert book.users() == [] and not [link for link in book.links() if link["user"]]


def test_the_acctmgr_message_with_an_account_deletes_only_that_association() -> None:
    core = core_from_conf(parse_slurm_conf_text("NodeName=n1 CPUs=1\nPartitionName=p Nodes=ALL Default=YES\n"),
                          now=0.0)
    core.accounts = _book()
    service = Service(core)
    root = Identity(0, 0, "root", operator=True)
    service.acctmgr(protocol.AcctMgr(action="delete", entity="user", names=["ann"], where={"account": "optics"}),
                    root, 0.0)
    assert [u["user"] for u in core.accounts.users()] == ["ann"]  # (it used to delete ann altogether)
    service.acctmgr(protocol.AcctMgr(action="delete", entity="user", names=["ann"]), root, 0.0)
    assert core.accounts.users() == []
