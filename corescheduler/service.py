"""The service layer: what each request means, between the RPC handlers and the core.

Request validation, authorization, job selection (by id, array task, user, state,
partition, name), ``scontrol update`` Key=Value parsing and sacctmgr semantics live
here, once, for every front end: the controller's ZeroMQ handlers call it today, a
REST server can call the same methods.  Like the core it does no I/O: the sender
comes as an ``Identity``, the clock as ``now``; messages for node daemons pile up in
``take_messages()`` as the core's writes do in ``core.take_effects()``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from plurm.corescheduler import authz
from plurm.corescheduler import idempotency
from plurm.corescheduler.accounts import ADMIN_OPERATOR, ADMIN_SUPER, AssociationError, parse_admin_level
from plurm.corescheduler.core import ClusterCore, JobChanges, parse_task_ids
from plurm.corescheduler.effects import Outgoing
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.identity import Identity
from plurm.grammar.hostlist import bitmap_ranges
from plurm.wire import model, protocol
from plurm.wire.model import Job


class Service:
    def __init__(self, core: ClusterCore) -> None:
        self.core = core
        self._messages: list[Outgoing] = []
        self.submit_keys = idempotency.SubmitKeys(core.jobs)  # idempotent submission (idempotency.py)

    def take_messages(self) -> list[Outgoing]:
        messages, self._messages = self._messages, []
        return messages

    def _send(self, items: list[Outgoing]) -> None:
        self._messages.extend(items)

    # ------------------------------------------------------------------ privileges (authz.py)
    def level(self, who: Identity | None) -> int:
        return authz.level_of(who, self.core.accounts)

    def require_operator(self, who: Identity | None) -> None:
        """Operators and Administrators (and root, SlurmUser) only."""
        if not authz.is_operator(who, self.core.accounts):
            raise authz.denied()

    def require_admin(self, who: Identity | None) -> None:
        """Administrators (and root, SlurmUser) only: what changes the cluster itself (nodes),
        Operators not.  Slurm's words for it: "Invalid user id" (slurm_update error: ...)."""
        if not authz.is_admin(who, self.core.accounts):
            raise authz.denied("Invalid user id")

    def private(self, kind: str, who: Identity | None) -> bool:
        """Whether PrivateData=<kind> hides others' records from this sender."""
        return kind in self.core.settings.private_data and not self.core.privileged(who)

    # ------------------------------------------------------------------ jobs
    def submit(self, msg: protocol.SubmitJob, who: Identity, now: float) -> dict[str, Any]:
        if msg.key is not None:  # a retry returns the job it made (idempotency.py)
            return idempotency.submit_once(self.submit_keys, self.core.jobs, self.submit, msg, who, now)
        self.core.check_job_reservation(msg.spec, who)  # --reservation (core_resv.py)
        if msg.components:  # a heterogeneous job (core_hetjob.py): the leader's id answers
            return self._submit_hetjob(msg, who, now)
        msg.spec.het_job_id = None  # (the core names hetjobs; a client's claim is ignored)
        self.core.check_licenses(msg.spec)  # -L (core_licenses.py)
        self.core.check_mail(msg.spec)  # --mail-type, --mail-user (core_mail.py)
        job, warnings = self.core.submit(msg.spec, who, now, msg.test_only)
        if msg.test_only:
            start, alloc = self.core.test_start(job, now)
            return {"job_id": job.job_id, "test_only": True, "start_time": start, "partition": job.partition,
                    "nodes": alloc.nodes if alloc else [], "cpus": sum(alloc.cpus) if alloc else 0,
                    "warnings": warnings}
        return {"job_id": job.job_id, "warnings": warnings}

    def submit_jobs(self, msg: protocol.SubmitJobs, one: Callable[[protocol.SubmitJob], dict[str, Any]]
                    ) -> dict[str, Any]:
        """Bulk: each entry through ``one`` (the controller's submit), one turn (idempotency.py)."""
        return idempotency.submit_many(one, msg)

    def _submit_hetjob(self, msg: protocol.SubmitJob, who: Identity, now: float) -> dict[str, Any]:
        for spec in msg.components:
            self.core.check_job_reservation(spec, who)
        jobs, warnings = self.core.submit_hetjob([msg.spec, *msg.components], who, now, msg.test_only)
        if msg.test_only:
            start, alloc = self.core.test_start(jobs[0], now)
            return {"job_id": jobs[0].job_id, "test_only": True, "start_time": start, "partition": jobs[0].partition,
                    "nodes": alloc.nodes if alloc else [], "cpus": sum(alloc.cpus) if alloc else 0,
                    "warnings": warnings}
        return {"job_id": jobs[0].job_id, "warnings": warnings, "het_job_ids": [job.job_id for job in jobs]}

    def job_info(self, msg: protocol.JobInfoRequest, who: Identity | None = None) -> list[Job]:
        jobs = list(self.core.jobs.values())
        if msg.job_ids:
            wanted: dict[int, Job] = {}
            for spec in msg.job_ids:
                for job in self.core.find_jobs(spec):
                    wanted[job.job_id] = job
            if not wanted and len(msg.job_ids) == 1:
                raise RequestError("Invalid job id specified", "InvalidJobId")
            jobs = list(wanted.values())
            if self.private("jobs", who) and len(msg.job_ids) == 1 and who is not None \
                    and not any(j.spec.user_id == who.uid for j in jobs):
                raise RequestError("Invalid job id specified", "InvalidJobId")  # as if it did not exist
        elif not msg.all_states:
            jobs = [j for j in jobs if j.state in model.ACTIVE_STATES or j.completing]
        if msg.states:
            states = set(msg.states)
            jobs = [j for j in jobs if j.state in states or (j.completing and "COMPLETING" in states)
                    or (j.configuring and j.state == model.RUNNING and "CONFIGURING" in states)]  # (core_reboot.py)
        if msg.users:
            users = set(msg.users)
            jobs = [j for j in jobs if j.spec.user in users or str(j.spec.user_id) in users]
        if msg.partitions:
            parts = set(msg.partitions)
            jobs = [j for j in jobs if j.partition in parts]
        if msg.names:
            names = set(msg.names)
            jobs = [j for j in jobs if j.spec.name in names]
        if self.private("jobs", who) and who is not None:
            jobs = [j for j in jobs if j.spec.user_id == who.uid]
        return jobs

    def node_info(self, msg: protocol.NodeInfoRequest, who: Identity | None = None) -> dict[str, Any]:
        nodes = []
        for node in self.core.nodes.values():
            if msg.nodes and node.name not in msg.nodes:
                continue
            if node.dynamic == "future" and not msg.future and not node.responding and node.boot_time is None:
                continue  # (a FUTURE node is seen by no command but scontrol -F, as Slurm's)
            record = protocol.to_builtins(node)
            record["state"] = self.core.resv_state(node, self.core.now)  # (+RESERVED: core_resv.py)
            nodes.append(record)
        partitions = [p for p in self.core.partitions.values() if not msg.partitions or p.name in msg.partitions]
        return {"nodes": nodes, "partitions": partitions, "licenses": self.core.license_report()}  # (scontrol)

    def cancel(self, msg: protocol.CancelJob, who: Identity, now: float) -> dict[str, Any]:
        results: list[dict[str, Any]] = []
        targets: list[tuple[Job, set[int] | None, str]] = []
        if msg.job_ids:
            for spec in msg.job_ids:
                found = self.core.find_jobs(spec)
                if not found:
                    results.append({"job": spec, "error": "Invalid job id specified", "code": "InvalidJobId"})
                    continue
                try:
                    self.core.het_cancel_check(spec, found)  # a pending hetjob's component alone (core_hetjob.py)
                except RequestError as exc:
                    results.append({"job": spec, "error": str(exc), "code": exc.code})
                    continue
                if len(found) > 1:
                    found = [j for j in found if j.state not in model.FINISHED_STATES or j.completing] or found[:1]
                task_ids = parse_task_ids(spec.split("_", 1)[1]) if "_" in spec else None
                targets.extend((job, task_ids, spec) for job in found)
        else:
            targets = [(job, None, str(job.job_id)) for job in self.core.jobs.values()
                       if job.state in model.ACTIVE_STATES]
        for job, task_ids, spec in targets:
            if msg.user is not None and msg.user not in (job.spec.user, str(job.spec.user_id)):
                continue
            if msg.names and job.spec.name not in msg.names:
                continue
            if msg.states and job.state not in msg.states:
                continue
            if msg.partitions and job.partition not in msg.partitions:
                continue
            try:
                self._send(self.core.cancel(job, who, now, msg.signal, msg.batch_only, task_ids, msg.full))
                results.append({"job": spec, "job_id": job.job_id})
            except RequestError as exc:
                results.append({"job": spec, "error": str(exc), "code": exc.code})
        return {"results": results}

    def update_job(self, msg: protocol.UpdateJob, who: Identity, now: float) -> dict[str, Any]:
        changes = parse_job_changes(msg.fields)  # a bad value refuses the whole request
        results = []
        for spec in msg.job_ids:
            try:
                found = self.core.find_jobs(spec)
            except RequestError:  # not a job id at all ("abc")
                found = []
            if not found:
                results.append({"job": spec, "error": "Invalid job id specified", "code": "InvalidJobId"})
                continue
            if len(found) > 1:  # a whole array: its finished tasks are left as they are
                found = [j for j in found if j.state not in model.FINISHED_STATES] or found[:1]
            for job in found:
                try:
                    self.core.update_job(job, changes, who, now)
                    results.append({"job": spec, "job_id": job.job_id})
                except RequestError as exc:
                    results.append({"job": spec, "error": str(exc), "code": exc.code})
        return {"results": results}

    def requeue_job(self, msg: protocol.RequeueJob, who: Identity, now: float) -> dict[str, Any]:
        """scontrol requeue / requeuehold: the job's owner's or an Operator+'s (the core checks)."""
        return {"results": [self._job_action(spec, lambda job: self.core.requeue_job(
            job, who, now, msg.hold, msg.incomplete)) for spec in msg.job_ids]}

    def suspend_job(self, msg: protocol.SuspendJob, who: Identity, now: float) -> dict[str, Any]:
        """scontrol suspend / resume: Operators+ only, not even the job's owner; refused before
        the job is looked for, as Slurm's job_suspend2 does."""
        if not authz.is_operator(who, self.core.accounts):
            return {"results": [{"job": spec, "error": authz.ACCESS_DENIED, "code": "AccessDenied"}
                                for spec in msg.job_ids]}
        act = self.core.resume_job if msg.resume else self.core.suspend_job
        act = self.core.het_whole(act)  # a hetjob's leader: every component (core_hetjob.py)
        return {"results": [self._job_action(spec, lambda job: act(job, now)) for spec in msg.job_ids]}

    def _job_action(self, spec: str, action: Callable[[Job], list[Outgoing]]) -> dict[str, Any]:
        """One job id of scontrol's: a job (``job_id``, or ``error`` and ``code``, Slurm's one
        return code), or the records of an array it names (``array``: the task ids grouped by
        outcome, in task order, as Slurm's job array response: ``{"job": "12_1-3", "error": None}``)."""
        try:
            found = self.core.find_jobs(spec)
        except RequestError:  # not a job id at all
            found = []
        base, _, task_spec = spec.partition("_")
        if not found and task_spec:  # tasks an array does not have: an array response
            try:
                missing = parse_task_ids(task_spec)
            except RequestError:
                missing = set()
            if missing:
                return {"job": spec, "array": [{"job": f"{base}_{bitmap_ranges(list(missing))}",
                                                "error": "Invalid job id specified"}]}
        if not found:
            return {"job": spec, "error": "Invalid job id specified", "code": "InvalidJobId"}
        if not task_spec and not any(j.array_job_id is not None and str(j.array_job_id) == base for j in found):
            try:  # a job, or one task of an array by its own id
                self._send(action(found[0]))
                return {"job": spec, "job_id": found[0].job_id}
            except RequestError as exc:
                return {"job": spec, "error": str(exc), "code": exc.code}
        wanted = parse_task_ids(task_spec) if task_spec else None
        groups: dict[str | None, list[int]] = {}
        for job in found:
            tasks = job.array_pending or ([job.array_task_id] if job.array_task_id is not None else [])
            if wanted is not None:
                tasks = [t for t in tasks if t in wanted]
            try:
                self._send(action(job))
                error = None
            except RequestError as exc:
                error = str(exc)
            groups.setdefault(error, []).extend(tasks)
        if wanted is not None:  # task ids the array does not have
            missing = wanted.difference(*groups.values())
            if missing:
                groups.setdefault("Invalid job id specified", []).extend(missing)
        ordered = sorted((item for item in groups.items() if item[1]), key=lambda item: min(item[1]))
        return {"job": spec, "array": [{"job": f"{base}_{bitmap_ranges(tasks)}", "error": error}
                                       for error, tasks in ordered]}

    def job_complete(self, msg: protocol.JobComplete, who: Identity, now: float) -> dict[str, Any]:
        self._send(self.core.allocation_complete(msg.job_id, who, msg.exit_code, msg.exit_signal, now,
                                                 msg.oom_kills))
        return {"ok": True}

    # ------------------------------------------------------------------ steps
    def step_info(self, msg: protocol.StepInfoRequest, who: Identity | None = None) -> dict[str, Any]:
        """The running steps (batch and srun steps) of the jobs a job_info would show, with
        those jobs (squeue -s prints a step's partition and user, which are its job's)."""
        try:
            jobs = self.job_info(protocol.JobInfoRequest(job_ids=msg.job_ids), who)
        except RequestError:
            jobs = []  # as Slurm: an unknown job has no steps ("Job step ... not found")
        by_id = {j.job_id: j for j in jobs}
        steps = [s for (job_id, _), s in sorted(self.core.steps.items(), key=lambda kv: _step_order(kv[0]))
                 if job_id in by_id]
        return {"steps": steps, "jobs": [by_id[i] for i in sorted({s.job_id for s in steps})]}

    def step_create(self, msg: protocol.StepCreate, who: Identity, now: float) -> dict[str, Any]:
        if msg.no_allocate:  # srun -Z: root and SlurmUser only (srun(1)), Slurm's words for the others
            if who is None or not who.operator:
                raise RequestError("Access/permission denied", "AccessDenied")
            return self.core.step_no_allocate(who, now, msg.ntasks, msg.nodelist, msg.cpus_per_task)
        return self.core.step_create(msg.job_id, who, now, msg.name, msg.ntasks, msg.nodes_min,
                                     msg.cpus_per_task, msg.nodelist, overcommit=msg.overcommit,
                                     relative=msg.relative, exact=msg.exact, whole=msg.whole, overlap=msg.overlap,
                                     resv_ports=msg.resv_ports, interactive=msg.interactive)

    def step_complete(self, msg: protocol.StepComplete, who: Identity, now: float) -> dict[str, Any]:
        job = self.core.jobs.get(msg.job_id)
        if job is not None:
            self.core.check_owner(job, who)
        self.core.step_complete(msg.job_id, msg.step_id, msg.exit_code, msg.exit_signal, now, msg.oom_kills,
                                msg.usage)
        return {"ok": True}

    # ------------------------------------------------------------------ nodes
    def update_node(self, msg: protocol.UpdateNode, who: Identity, now: float) -> dict[str, Any]:
        self.require_admin(who)
        self._send(self.core.update_nodes(list(msg.nodes), msg.state, msg.reason, who, now, msg.comment))
        return {"ok": True}

    def reboot_nodes(self, msg: protocol.RebootNodes, who: Identity, now: float) -> dict[str, Any]:
        """scontrol reboot (Administrators, as a node update)."""
        self.require_admin(who)
        self._send(self.core.reboot_nodes(list(msg.nodes), msg.asap, msg.next_state, msg.reason, who, now))
        return {"ok": True}

    def reservation(self, msg: protocol.ReservationRequest, who: Identity, now: float,
                    user_exists: Callable[[str], bool]) -> dict[str, Any]:
        """scontrol create|update|delete|show reservation (core_resv.py: Operators+ change them)."""
        if msg.action == "create":
            return {"name": self.core.create_reservation(msg.fields, who, now, user_exists)}
        if msg.action == "update":
            self.core.update_reservation(msg.fields, who, now, user_exists)
        elif msg.action == "delete":
            self.core.delete_reservation(msg.name or "", who, now)
        elif msg.action == "show":
            records = self.core.reservation_records(msg.name, now)
            if self.private("reservations", who):  # PrivateData=reservations: only those they may use
                book = self.core.accounts
                records = [r for r in records if who.user in r["users"]
                           or any(book.has_association(who.user, a) for a in r["accounts"])]
            return {"reservations": records, "now": now}
        else:
            raise RequestError(f"unknown reservation action {msg.action!r}", "MalformedMessage")
        return {"ok": True}

    def reconfigure(self, parts: dict[str, Any], who: Identity, now: float) -> list[str]:
        """scontrol reconfigure with slurm.conf re-read (configure.reconfig_parts): SlurmUser,
        root and Administrators only; every node daemon is told to read it too."""
        self.require_admin(who)
        licenses = parts.pop("licenses", None)  # (not the nodes': core_licenses.py, once the rest is taken)
        changed = self.core.reconfigure(now=now, **parts)
        if licenses is not None and self.core.set_license_totals(licenses):
            changed.append("licenses")
        self._send([Outgoing(name, "reconfigure_node", {}) for name in self.core.nodes])
        return changed

    def node_register(self, name: str, msg: protocol.NodeRegister, now: float) -> None:
        self._send(self.core.node_register(name, protocol.to_builtins(msg), now))
        self._send(self.core.reboot_registered(name, msg.boot_time, msg.slurmd_start_time))  # (scontrol reboot)

    def node_ping(self, name: str, msg: protocol.NodePing, now: float) -> None:
        self._send(self.core.node_ping(name, msg.running_jobs, msg.cpu_load, msg.free_mem, now, msg.unhealthy,
                                       msg.runs))

    def job_ended(self, name: str, msg: protocol.JobEnded, now: float) -> None:
        self._send(self.core.job_ended(msg.job_id, msg.exit_code, msg.exit_signal, msg.end_time, now,
                                       msg.timed_out, msg.tres_usage_max, msg.tres_usage_ave, msg.launch_failed,
                                       msg.requeue_held, msg.restarts, name, msg.oom_kills, msg.usage))
        # Acknowledged even when ignored (another run's end): the node may forget it.
        self._send([Outgoing(name, "job_ended_ack", {"job_id": msg.job_id, "restarts": msg.restarts})])

    def job_frozen(self, name: str, msg: protocol.JobFrozen, now: float) -> None:
        """Node ``name``'s freeze policy froze a job (core_requeue.job_frozen); a RequestError
        (JobNotOnNode) if the job does not run there."""
        self._send(self.core.job_frozen(msg.job_id, name, msg.restarts, msg.cause, now))

    # ------------------------------------------------------------------ priorities and associations
    def priority_factors(self, msg: protocol.PriorityFactorsRequest, priority_type: str,
                         now: float, who: Identity | None = None) -> protocol.PriorityFactorsReply:
        weights = getattr(self.core.priority_policy, "weights", None)
        by_factor = getattr(weights, "by_factor", None)
        rows = self.core.priority_factors(now, msg.job_ids, msg.users)
        if self.private("jobs", who) and who is not None:
            rows = [row for row in rows if row["user_id"] == who.uid]
        return protocol.PriorityFactorsReply(
            type=priority_type, cluster=self.core.cluster_name, weights=by_factor() if by_factor else {},
            jobs=[protocol.PriorityFactorsRow(**row) for row in rows])

    def acctmgr(self, msg: protocol.AcctMgr, who: Identity | None, now: float) -> dict[str, Any]:
        """sacctmgr add/modify/delete (Operators and Administrators) and show (PrivateData
        users/accounts hide the others' records from the rest)."""
        book = self.core.accounts
        if msg.action != "show":
            self._check_acctmgr_change(msg, who)
        elif msg.entity == "account" and self.private("accounts", who):
            raise authz.denied(detail=authz.ACCESS_DENIED)
        try:
            if msg.action == "add":
                for name in msg.names:
                    if msg.entity == "account":
                        book.add_account(name, msg.fields.get("parent", "root"), msg.fields.get("description"),
                                         msg.fields.get("organization"), int(msg.fields.get("fairshare", 1)))
                    elif msg.entity == "user":
                        for account in msg.fields.get("account", "").split(","):
                            if not account:
                                raise AssociationError("You need to specify an account name")
                            book.add_user(name, account, msg.fields.get("defaultaccount"),
                                          int(msg.fields.get("fairshare", 1)), msg.fields.get("adminlevel"))
                    else:
                        book.add_qos(name, int(msg.fields.get("priority", 0)),
                                     int(msg.fields["maxjobsperuser"]) if "maxjobsperuser" in msg.fields else None,
                                     msg.fields.get("preempt", ""), msg.fields.get("preemptmode"))
            elif msg.action == "modify":
                for name in msg.names:
                    book.modify(msg.entity, name, msg.fields, msg.where.get("account"))
            elif msg.action == "delete":
                for name in msg.names:
                    if msg.entity == "user" and msg.where.get("account"):  # one association, not the user
                        for account in msg.where["account"].split(","):
                            book.delete_association(name, account)
                    else:
                        book.delete(msg.entity, name)
        except (AssociationError, ValueError) as exc:
            raise RequestError(str(exc), "AssociationError") from None
        if msg.action != "show":
            self.core.recompute_priorities(now)
        users, links, accounts = book.users(), book.links(), book.accounts()
        if (self.private("users", who) or self.private("accounts", who)) and who is not None:
            # The sender's own user and associations, and the accounts above them.
            users = [u for u in users if u["user"] == who.user]
            links = [link for link in links if link["user"] == who.user]
            path = self._account_path({link["account"] for link in links})
            accounts = [a for a in accounts if a["account"] in path]
        return {"accounts": accounts, "users": users, "qos": book.qos(), "links": links,
                "cluster": self.core.cluster_name}

    def _check_acctmgr_change(self, msg: protocol.AcctMgr, who: Identity | None) -> None:
        """Operators change the database; an AdminLevel is an Administrator's to give; a
        plain user may change only their own default account (to one they belong to)."""
        level = self.level(who)
        wants_level = msg.entity == "user" and "adminlevel" in msg.fields
        if wants_level:
            try:
                parse_admin_level(msg.fields["adminlevel"])
            except AssociationError as exc:
                raise RequestError(str(exc), "AssociationError") from None
        if level >= ADMIN_SUPER or (level >= ADMIN_OPERATOR and not wants_level):
            return
        if level >= ADMIN_OPERATOR:
            raise authz.denied(detail="You must be a super user to modify a users admin level")
        own = who is not None and msg.entity == "user" and msg.names == [who.user]
        if msg.action == "modify" and own and set(msg.fields) == {"defaultaccount"} and \
                self.core.accounts.has_association(who.user, msg.fields["defaultaccount"]):
            return
        if msg.action == "modify" and own:
            raise authz.denied(detail="You can only change your own default account, default wckey nothing else")
        raise authz.denied(detail=None if msg.action == "add" else
                           "Your user doesn't have privilege to perform this action")

    def _account_path(self, accounts: set[str]) -> set[str]:
        """These accounts and every account above them."""
        parents = {a.name: a.parent for a in self.core.accounts.accounts_by_name.values()}
        path: set[str] = set()
        for account in accounts:
            name: str | None = account
            while name is not None and name not in path:
                path.add(name)
                name = parents.get(name)
        return path

    def share_info(self, now: float, who: Identity | None = None, run_mins: bool = False) -> dict[str, Any]:
        """sshare's lines; PrivateData=usage: only the sender's own (no account lines).
        ``run_mins``: count TRESRunMins, which Slurm keeps only when AccountingStorageEnforce
        has limits (its association limits are what they are for); zeros otherwise, as the
        real 22.05 shows with AccountingStorageEnforce=associations and jobs running."""
        shares = self.core.accounts.shares(now)
        if self.private("usage", who) and who is not None:
            # (flat, as Slurm prints them then: the lines above them are not there)
            shares = [dataclasses.replace(s, depth=0) for s in shares if s.user == who.user]
        lines = [protocol.to_builtins(s) for s in shares]
        run = self._tres_run_mins(now) if run_mins else {}
        for line in lines:
            line["tres_run_mins"] = run.get((line["account"], line["user"]), _NO_TRES_RUN)
        return {"shares": lines}

    def _tres_run_mins(self, now: float) -> dict[tuple[str, str | None], dict[str, int]]:
        """sshare's TRESRunMins: each running job's TRES times its minutes left, summed per
        (account, user), and per account over its whole subtree (user None); root has all."""
        parents = {a["account"]: a["parent"] for a in self.core.accounts.accounts()}
        run: dict[tuple[str, str | None], dict[str, int]] = {}
        for job in self.core.jobs.values():
            if job.state != "RUNNING" or job.start_time is None or not job.spec.account:
                continue
            limit_s = (job.time_limit if job.time_limit is not None else _UNLIMITED_MIN) * 60
            left = max(0, int((job.start_time + limit_s - now) // 60))
            cpus, mem = sum(job.cpus), sum(job.mem)
            tres = {"cpu": cpus * left, "mem": mem * left, "node": len(job.nodes) * left, "billing": cpus * left}
            keys: list[tuple[str, str | None]] = [(job.spec.account, job.spec.user)]
            account: str | None = job.spec.account
            while account is not None and (account, None) not in keys:
                keys.append((account, None))
                account = parents.get(account)
            if ("root", None) not in keys:
                keys.append(("root", None))
            for key in keys:
                total = run.setdefault(key, dict(_NO_TRES_RUN))
                for name, value in tres.items():
                    total[name] += value
        return run


# TRESRunMins with accounting's default TRES, in Slurm's order (energy, fs/disk, vmem and pages
# are not tracked by plurm: 0, as Slurm shows them without their gather plugins).
_NO_TRES_RUN = {"cpu": 0, "mem": 0, "energy": 0, "node": 0, "billing": 0, "fs/disk": 0, "vmem": 0, "pages": 0}
# A job without a time limit: counted against a year (plurm's choice: Slurm does not document it).
_UNLIMITED_MIN = 365 * 24 * 60


def _step_order(key: tuple[int, str]) -> tuple[int, int]:
    """Steps in Slurm's order: by job, numbered steps before the batch step."""
    job_id, step_id = key
    return job_id, int(step_id) if step_id.isdigit() else 1 << 30


def _int(key: str, value: str, low: int = 0, high: int = authz.PRIORITY_MAX) -> int:
    """An integer of scontrol update, in range, or scontrol's own complaint about it."""
    try:
        number = int(value.strip())
    except ValueError:
        raise RequestError(f"Invalid {key} value: {value}", "InvalidUpdate") from None
    if not low <= number <= high:
        raise RequestError(f"Invalid {key} value: {value}", "InvalidUpdate")
    return number


def _bounded(field: str, value: str) -> str:
    if len(value) > authz.STRING_LIMITS[field]:
        raise RequestError(authz.TOO_LONG, "PathnameTooLong")
    return value


def parse_job_changes(fields: dict[str, str]) -> JobChanges:
    """``scontrol update job`` Key=Value pairs (keys in any case) as typed changes."""
    changes = JobChanges()
    for key, value in fields.items():
        lowered = key.lower()
        if lowered == "hold":
            changes.hold = "admin" if value == "admin" else "user"
        elif lowered == "release":
            changes.release = True
        elif lowered == "timelimit":
            from plurm.grammar.timefmt import parse_time_limit

            try:
                changes.time_limit = parse_time_limit(value)
            except ValueError:
                raise RequestError("Invalid time limit specification", "InvalidTimeLimit") from None
        elif lowered == "partition":
            changes.partition = value
        elif lowered == "priority":
            changes.priority = _int("Priority", value)
        elif lowered == "nice":
            try:
                changes.nice = int(value.strip())
            except ValueError:
                raise RequestError(f"Invalid Nice value: {value}", "InvalidUpdate") from None
            if abs(changes.nice) > authz.NICE_LIMIT:
                raise RequestError(f"Nice value out of range (+/- {authz.NICE_LIMIT}). Value ignored",
                                   "InvalidUpdate")
        elif lowered in ("jobname", "name"):
            changes.name = _bounded("name", value)
        elif lowered == "comment":
            changes.comment = _bounded("comment", value)
        elif lowered == "admincomment":  # (the operators': core_update.py)
            changes.admin_comment = _bounded("comment", value)
        elif lowered in ("numnodes", "minnodes"):
            low, _, high = value.partition("-")
            changes.nodes = (_int("NumNodes", low, 1), _int("NumNodes", high, 1) if high else None)
        elif lowered in ("numtasks", "ntasks"):
            changes.ntasks = _int("NumTasks", value, 1)
        elif lowered == "licenses":  # (checked by the core against the pool, its length too: core_licenses.py)
            changes.licenses = value
        elif lowered == "reservation":  # (checked by the core: core_resv.reservation_change)
            changes.reservation = value
        else:
            raise RequestError(f"Update of {key} is not supported", "InvalidUpdate")
    return changes
