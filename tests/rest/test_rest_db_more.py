"""``/slurmdb/vX/`` accounts, users, associations and QOS (issue 16) against a real local
cluster: what ``sacctmgr add`` put in the controller's book read back over REST in each
version's schema, filters, 404 for a name the book lacks, and DELETE for operators only (the
book checked with ``sacctmgr show`` afterwards).  Its own module: the accounts it adds would
change what the other REST modules' jobs and reservations are allowed.
"""

from __future__ import annotations

import pytest

from resttest import ME, VERSIONS, Rest, call, validate


@pytest.fixture(scope="module")
def book(rest: Rest) -> Rest:
    run = rest.cluster.run
    run("sacctmgr", "-i", "add", "account", "physics", "Description=phys", "Organization=uni", "Fairshare=5",
        check=True)
    run("sacctmgr", "-i", "add", "account", "optics", "Parent=physics", check=True)
    run("sacctmgr", "-i", "add", "user", ME, "Account=physics", "AdminLevel=Administrator", check=True)
    run("sacctmgr", "-i", "add", "user", "nobody", "Account=optics", check=True)
    run("sacctmgr", "-i", "add", "qos", "scav", "Priority=10", "PreemptMode=CANCEL", "MaxJobsPerUser=3",
        check=True)
    return rest


def _listed(rest: Rest, entity: str) -> list[str]:
    """The first column of ``sacctmgr -n -P show ENTITY``: the names the book holds."""
    out = rest.cluster.run("sacctmgr", "-n", "-P", "show", entity, check=True).stdout
    return [line.split("|", 1)[0] for line in out.splitlines()]


def _get(rest: Rest, version: str, path: str, token: str | None = None) -> dict:
    status, body = call(rest.url, "GET", f"/slurmdb/{version}/{path}", token or rest.token(), ME)
    assert status == 200, body
    return body


@pytest.mark.parametrize("version", VERSIONS)
def test_accounts_users_associations_and_qos_as_the_book_holds_them(book: Rest, version: str) -> None:
    body = _get(book, version, "accounts/")
    validate(body, version, "GET", "/slurmdb/{version}/accounts/")
    accounts = {a["name"]: a for a in body["accounts"]}
    assert {"physics", "optics"} <= set(accounts), sorted(accounts)
    assert accounts["physics"]["description"] == "phys" and accounts["physics"]["organization"] == "uni"
    assert {(a["user"], a["account"]) for a in accounts["physics"]["associations"]} >= {("", "physics"),
                                                                                       (ME, "physics")}
    body = _get(book, version, "account/optics")
    validate(body, version, "GET", "/slurmdb/{version}/account/{account_name}")
    assert [a["name"] for a in body["accounts"]] == ["optics"]

    body = _get(book, version, "users/")
    validate(body, version, "GET", "/slurmdb/{version}/users/")
    users = {u["name"]: u for u in body["users"]}
    assert users[ME]["administrator_level"] == ["Administrator"] and users[ME]["default"]["account"] == "physics"
    assert users["nobody"]["administrator_level"] == ["None"]
    body = _get(book, version, "users/?admin_level=Administrator")
    assert [u["name"] for u in body["users"]] == [ME]
    body = _get(book, version, "user/nobody")
    validate(body, version, "GET", "/slurmdb/{version}/user/{name}")
    assert [(a["account"], a["user"]) for a in body["users"][0]["associations"]] == [("optics", "nobody")]

    for path in ("associations/", "association/"):
        body = _get(book, version, path)
        validate(body, version, "GET", f"/slurmdb/{{version}}/{path}")
        pairs = {(a["account"], a["user"]): a for a in body["associations"]}
        assert pairs[("optics", "")]["parent_account"] == "physics"
        assert pairs[("physics", "")]["shares_raw"] == 5
        assert pairs[("optics", "nobody")]["is_default"] is True
    body = _get(book, version, "associations/?user=nobody")
    assert [(a["account"], a["user"]) for a in body["associations"]] == [("optics", "nobody")]

    body = _get(book, version, "qos/")
    validate(body, version, "GET", "/slurmdb/{version}/qos/")
    qos = {q["name"]: q for q in body["qos"]}
    assert {"normal", "scav"} <= set(qos)
    assert qos["scav"]["priority"]["number"] == 10 and qos["scav"]["preempt"]["mode"] == ["CANCEL"]
    assert qos["scav"]["limits"]["max"]["jobs"]["active_jobs"]["per"]["user"]["number"] == 3
    body = _get(book, version, "qos/scav")
    validate(body, version, "GET", "/slurmdb/{version}/qos/{qos}")
    assert [q["name"] for q in body["qos"]] == ["scav"]


@pytest.mark.parametrize("path", ["account/nosuch", "user/nosuch", "qos/nosuch"])
def test_a_name_the_book_lacks_is_a_404(book: Rest, path: str) -> None:
    status, body = call(book.url, "GET", f"/slurmdb/v0.0.44/{path}", book.token(), ME)
    assert status == 404 and body["errors"], body
    schema_path = {"account": "account/{account_name}", "user": "user/{name}", "qos": "qos/{qos}"}[path.split("/")[0]]
    validate(body, "v0.0.44", "GET", f"/slurmdb/{{version}}/{schema_path}")
    status, body = call(book.url, "DELETE", f"/slurmdb/v0.0.44/{path}", book.token(), ME)
    assert status == 404 and body["errors"], body


def test_delete_is_for_operators_and_removes_from_the_book(book: Rest) -> None:
    run = book.cluster.run
    run("sacctmgr", "-i", "add", "account", "gone", check=True)
    run("sacctmgr", "-i", "add", "qos", "goneq", check=True)
    nobody = book.token("username=nobody")
    for path in ("account/gone", "qos/goneq"):
        status, body = call(book.url, "DELETE", f"/slurmdb/v0.0.44/{path}", nobody, "nobody")
        assert status != 200 and body["errors"], body
    assert "gone" in _listed(book, "account") and "goneq" in _listed(book, "qos")

    status, body = call(book.url, "DELETE", "/slurmdb/v0.0.44/account/gone", book.token(), ME)
    assert status == 200, body
    validate(body, "v0.0.44", "DELETE", "/slurmdb/{version}/account/{account_name}")
    assert body["removed_accounts"] == ["gone"]
    status, body = call(book.url, "DELETE", "/slurmdb/v0.0.45/qos/goneq", book.token(), ME)
    assert status == 200, body
    validate(body, "v0.0.45", "DELETE", "/slurmdb/{version}/qos/{qos}")
    assert body["removed_qos"] == ["goneq"]
    shown = _listed(book, "account")
    assert "gone" not in shown and "physics" in shown, shown
    assert "goneq" not in _listed(book, "qos") and "scav" in _listed(book, "qos")

    run("sacctmgr", "-i", "add", "user", "daemon", "Account=optics", check=True)
    status, body = call(book.url, "DELETE", "/slurmdb/v0.0.43/user/daemon", book.token(), ME)
    assert status == 200, body
    validate(body, "v0.0.43", "DELETE", "/slurmdb/{version}/user/{name}")
    assert "daemon" not in _listed(book, "user") and ME in _listed(book, "user")


def test_post_adds_or_changes_accounts_users_and_qos(book: Rest) -> None:
    token = book.token()
    body = {"accounts": [{"name": "chem", "description": "chemistry", "organization": "uni"},
                         {"name": "physics", "description": "physics dept", "organization": "uni",
                          "mcs_label": "x"}]}
    status, answer = call(book.url, "POST", "/slurmdb/v0.0.44/accounts/", token, ME, body=body)
    assert status == 200, answer
    validate(answer, "v0.0.44", "POST", "/slurmdb/{version}/accounts/")
    assert any("mcs_label" in w["description"] for w in answer["warnings"]), answer["warnings"]
    accounts = {a["name"]: a for a in _get(book, "v0.0.44", "accounts/")["accounts"]}
    assert accounts["chem"]["description"] == "chemistry"
    assert accounts["physics"]["description"] == "physics dept"  # (there already: changed)

    body = {"users": [{"name": "daemon", "default": {"account": "chem"}},
                      {"name": "nobody", "administrator_level": ["Operator"]}]}
    status, answer = call(book.url, "POST", "/slurmdb/v0.0.45/users/", token, ME, body=body)
    assert status == 200, answer
    validate(answer, "v0.0.45", "POST", "/slurmdb/{version}/users/")
    users = {u["name"]: u for u in _get(book, "v0.0.45", "users/")["users"]}
    assert users["daemon"]["default"]["account"] == "chem"
    assert users["nobody"]["administrator_level"] == ["Operator"]
    call(book.url, "POST", "/slurmdb/v0.0.45/users/", token, ME,
         body={"users": [{"name": "nobody", "administrator_level": ["None"]}]})
    assert "nobody" in _listed(book, "user")

    body = {"qos": [{"name": "fast", "description": "the fast lane", "priority": {"set": True, "number": 50},
                     "preempt": {"list": ["scav"], "mode": ["REQUEUE"]},
                     "limits": {"max": {"jobs": {"active_jobs": {"per": {"user": {"set": True, "number": 2}}}}}}}]}
    status, answer = call(book.url, "POST", "/slurmdb/v0.0.43/qos/", token, ME, body=body)
    assert status == 200, answer
    validate(answer, "v0.0.43", "POST", "/slurmdb/{version}/qos/")
    fast = _get(book, "v0.0.43", "qos/fast")["qos"][0]
    assert fast["description"] == "the fast lane" and fast["priority"]["number"] == 50
    assert fast["preempt"] == {**fast["preempt"], "list": ["scav"], "mode": ["REQUEUE"]}
    assert fast["limits"]["max"]["jobs"]["active_jobs"]["per"]["user"]["number"] == 2
    shown = book.cluster.run("sacctmgr", "-n", "-P", "show", "qos", "format=name,priority", check=True).stdout
    assert "fast|50" in shown, shown


@pytest.mark.parametrize("path, body, words", [
    ("accounts/", {"accounts": []}, "a list of 1 to"),
    ("accounts/", {"accounts": [{"description": "no name"}]}, "needs a name"),
    ("users/", {"users": [{"name": "operator"}]}, "needs default.account"),
    ("users/", {"users": [{"name": "nobody", "administrator_level": ["God"]}]}, "AdminLevel"),
    ("qos/", {"qos": [{"name": "q", "preempt": {"mode": ["SOMETIMES"]}}]}, "preempt.mode"),
    ("qos/", [1], "a list of 1 to"),
])
def test_bad_additions_are_refused_with_the_reason(book: Rest, path: str, body, words: str) -> None:
    status, answer = call(book.url, "POST", f"/slurmdb/v0.0.44/{path}", book.token(), ME, body=body)
    assert status in (400, 500) and answer["errors"], answer
    assert words.lower() in answer["errors"][0]["description"].lower(), answer["errors"]
    validate(answer, "v0.0.44", "POST", f"/slurmdb/{{version}}/{path}")
    assert "operator" not in _listed(book, "user") and "q" not in _listed(book, "qos")


def test_post_is_for_operators(book: Rest) -> None:
    nobody = book.token("username=nobody")
    status, answer = call(book.url, "POST", "/slurmdb/v0.0.44/accounts/", nobody, "nobody",
                          body={"accounts": [{"name": "sneaky"}]})
    assert status != 200 and answer["errors"], answer
    assert "sneaky" not in _listed(book, "account")


def _assocs(rest: Rest) -> set[tuple[str, str]]:
    out = rest.cluster.run("sacctmgr", "-n", "-P", "show", "assoc", "format=account,user", check=True).stdout
    return {tuple(line.split("|")[:2]) for line in out.splitlines() if line.split("|")[1:2] != [""]}


def test_associations_are_added_and_removed_one_at_a_time(book: Rest) -> None:
    """POST associations/ and DELETE association(s)/ (rest/routes_assoc.py): one user's link to
    one account, the user and their other links kept -- and ``sacctmgr delete user NAME
    account=A`` the same (it used to delete the user)."""
    token = book.token()
    status, body = call(book.url, "POST", "/slurmdb/v0.0.44/associations/", token, ME,
                        body={"associations": [{"user": ME, "account": "optics", "comment": "x"}]})
    assert status == 200, body
    validate(body, "v0.0.44", "POST", "/slurmdb/{version}/associations/")
    assert ("optics", ME) in _assocs(book) and ("physics", ME) in _assocs(book)
    assert any("comment" in w["description"] for w in body["warnings"]), body

    nobody = book.token("username=nobody")
    status, body = call(book.url, "DELETE", f"/slurmdb/v0.0.44/association/?account=optics&user={ME}", nobody,
                        "nobody")
    assert status != 200 and body["errors"], body
    assert ("optics", ME) in _assocs(book)

    status, body = call(book.url, "DELETE", f"/slurmdb/v0.0.43/association/?account=optics&user={ME}", token, ME)
    assert status == 200, body
    validate(body, "v0.0.43", "DELETE", "/slurmdb/{version}/association/")
    assert len(body["removed_associations"]) == 1 and "A = optics" in body["removed_associations"][0], body
    assert ("optics", ME) not in _assocs(book) and ("physics", ME) in _assocs(book)
    assert ME in _listed(book, "user") and ("optics", "nobody") in _assocs(book)
    status, body = call(book.url, "DELETE", f"/slurmdb/v0.0.45/associations/?account=optics&user={ME}", token, ME)
    assert status == 404, body
    for bad in ({"associations": [{"account": "optics"}]}, {"associations": []}, {"nothing": 1}):
        status, body = call(book.url, "POST", "/slurmdb/v0.0.44/associations/", token, ME, body=bad)
        assert status == 400 and body["errors"], (bad, body)
    status, body = call(book.url, "DELETE", "/slurmdb/v0.0.44/associations/?account=optics", token, ME)
    assert status == 400, body

    run = book.cluster.run
    run("sacctmgr", "-i", "add", "user", ME, "Account=optics", check=True)
    assert ("optics", ME) in _assocs(book)
    run("sacctmgr", "-i", "delete", "user", ME, "Account=optics", check=True)
    assert ("optics", ME) not in _assocs(book) and ME in _listed(book, "user")
