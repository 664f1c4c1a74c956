"""scontrol: show and change the controller's jobs, nodes, partitions and configuration.

Supported: ``show job|node|partition|config|hostnames|hostlist|hostlistsorted|step``,
``update JobId=...|NodeName=...``, ``hold``, ``uhold``/``holdu``, ``release``, ``requeue``,
``requeuehold``, ``suspend``, ``resume``, ``reboot``, ``cancel_reboot``, ``reconfigure``
(tools/scontrol_node.py), ``ping``, ``version``, ``help``, the options ``-a -d -o -Q -v -V -h``,
and an interactive mode reading commands from standard input.  Not supported (an error,
exit 1): reservations and the rest of Slurm's commands.

Start-up budget: stdlib (json) only on the way to the request; msgspec, zmq and lark are
never imported here.
"""

from __future__ import annotations

import os
import sys
import time

from plurm.common.cli import OptionError, Table, iter_getopt, try_help
from plurm.tools import scontrol_dynnode, scontrol_jobctl, scontrol_resv, scontrol_show, scontrol_token

PROG = "scontrol"

# How Slurm's parser names the entities of "show"; unique prefixes are accepted.
# what `show job` takes for a job id (Slurm's scontrol refuses anything else itself)
_ENTITIES = ("aliases", "assoc_mgr", "bbstat", "burstbuffer", "config", "daemons", "dwstat", "federation",
             "frontend", "hostlist", "hostlistsorted", "hostnames", "job", "jobs", "licenses", "node", "nodes",
             "partition", "partitions", "reservation", "reservations", "slurmd", "step", "steps", "topology")

# scontrol update JobId=... keys that the controller applies, by their lower-case name.
_JOB_KEYS = {"timelimit": "TimeLimit", "partition": "Partition", "priority": "Priority", "nice": "Nice",
             "jobname": "JobName", "name": "JobName", "comment": "Comment", "numnodes": "NumNodes",
             "minnodes": "NumNodes", "reqnodes": "NumNodes", "numtasks": "NumTasks", "reqprocs": "NumTasks",
             "reservation": "Reservation", "admincomment": "AdminComment"}


class _Exit(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class Scontrol:
    def __init__(self) -> None:
        self.oneliner = False
        self.details = 0
        self.quiet = False
        self.verbose = 0
        self.all = False
        self.future = False  # -F/--future: FUTURE nodes too (scontrol_show.show_nodes)
        self.rc = 0
        self.output = None  # --json/--yaml: a plurm.tools.dataparser.emit.Output
        self.cli_output = None  # the one given before the command words (holds for every line)
        self.argv: list[str] = []  # the command line, for --json's meta

    # ------------------------------------------------------------------ plumbing
    def request(self, msg_type: str, body: dict) -> dict:
        from plurm.wire.client import request

        return request(msg_type, body)

    def error(self, text: str) -> None:
        sys.stderr.write(_slurm_message(text) + "\n")
        self.rc = 1

    # ------------------------------------------------------------------ commands
    def run_words(self, words: list[str]) -> int:
        """Run one command line (already split); returns the exit status it sets."""
        if not words:
            return 0
        cmd = words[0].lower()
        args = words[1:]
        table = {
            "show": self.cmd_show, "update": self.cmd_update, "hold": self.cmd_hold,
            "uhold": self.cmd_uhold, "holdu": self.cmd_uhold, "release": self.cmd_release,
            "version": self.cmd_version, "help": self.cmd_help, "ping": self.cmd_ping, "takeover": self.cmd_takeover,
            "oneliner": self.cmd_oneliner, "details": self.cmd_details, "quiet": self.cmd_quiet,
            "verbose": self.cmd_verbose, "all": self.cmd_all, "hide": self.cmd_hide,
            "requeue": lambda rest: scontrol_jobctl.requeue(self, rest, words[0], hold=False),
            "requeuehold": lambda rest: scontrol_jobctl.requeue(self, rest, words[0], hold=True),
            "suspend": lambda rest: scontrol_jobctl.suspend(self, rest, words[0], resume=False),
            "resume": lambda rest: scontrol_jobctl.suspend(self, rest, words[0], resume=True),
            "reboot": self.cmd_reboot, "reboot_nodes": self.cmd_reboot,
            "cancel_reboot": self.cmd_cancel_reboot, "reconfigure": self.cmd_reconfigure,
            "listpids": self.cmd_listpids,
            "token": lambda rest: scontrol_token.token(self, rest),
            "create": lambda rest: scontrol_dynnode.create(self, rest) or scontrol_resv.create(self, rest),
            "delete": lambda rest: scontrol_dynnode.delete(self, rest) or scontrol_resv.delete(self, rest),
        }
        func = table.get(cmd)
        if func is None and len(cmd) >= 3 and "reboot_nodes".startswith(cmd):  # (Slurm's prefix for reboot)
            func = table["reboot"]
        if func is None and cmd.startswith("requeuehold"):  # (Slurm's prefixes for these two)
            func = table["requeuehold"]
        elif func is None and len(cmd) >= 3 and "requeue".startswith(cmd):
            func = table["requeue"]
        if func is None:
            matches = [name for name in table if name.startswith(cmd)] if len(cmd) >= 2 else []
            if len(matches) == 1:
                func = table[matches[0]]
        if func is None:
            if cmd in ("exit", "quit"):
                raise _Exit(self.rc)
            self.error(f"invalid keyword: {words[0]}")
            return 1
        func(args)
        return self.rc

    def cmd_reboot(self, args: list[str]) -> None:
        from plurm.tools import scontrol_node

        scontrol_node.reboot(self, args)

    def cmd_cancel_reboot(self, args: list[str]) -> None:
        from plurm.tools import scontrol_node

        scontrol_node.cancel_reboot(self, args)

    def cmd_reconfigure(self, args: list[str]) -> None:
        from plurm.tools import scontrol_node

        scontrol_node.reconfigure(self, args)

    def cmd_oneliner(self, args: list[str]) -> None:
        self.oneliner = True

    def cmd_details(self, args: list[str]) -> None:
        self.details = max(self.details, 1)

    def cmd_quiet(self, args: list[str]) -> None:
        self.quiet = True

    def cmd_verbose(self, args: list[str]) -> None:
        self.verbose += 1

    def cmd_all(self, args: list[str]) -> None:
        self.all = True

    def cmd_hide(self, args: list[str]) -> None:
        self.all = False

    def cmd_version(self, args: list[str]) -> None:
        from plurm import write_version

        write_version()  # stdout: Slurm's line; stderr: plurm's

    def cmd_listpids(self, args: list[str]) -> None:
        from plurm.tools.scontrol_listpids import list_pids

        out, err, rc = list_pids(self.request, args)
        sys.stdout.write(out)
        sys.stderr.write(err)
        self.rc = rc or self.rc

    def cmd_help(self, args: list[str]) -> None:
        from plurm.tools.scontrol_help import HELP

        sys.stdout.write(HELP)

    def cmd_ping(self, args: list[str]) -> None:
        from plurm.tools import scontrol_ctld

        if args:  # Slurm's words, without its prefix, even with -Q
            self.error("too many arguments for keyword:ping")
            return
        scontrol_ctld.ping(self, args)

    def cmd_takeover(self, args: list[str]) -> None:
        from plurm.tools import scontrol_ctld

        scontrol_ctld.takeover(self, args)

    # ------------------------------------------------------------------ show
    def take_output(self, key: str, value: str | None) -> bool:
        """``--json[=data_parser]``/``--yaml[=...]``: False (after the message) when refused."""
        from plurm.tools.dataparser.emit import OutputError, parse

        try:
            self.output = parse(PROG, key, value)
        except OutputError as exc:
            (sys.stderr if exc.code else sys.stdout).write(exc.text)
            self.rc = exc.code
            return False
        return True

    def cmd_show(self, args: list[str]) -> None:
        self.output = self.cli_output  # (one given among a line's words holds for that line only)
        # Slurm's getopt permutes: `scontrol show job 5 --json` is the option, not an id.
        for word in [a for a in args if a.startswith(("--json", "--yaml"))]:
            name, eq, value = word[2:].partition("=")
            if name in ("json", "yaml"):
                args = [a for a in args if a != word]
                if not self.take_output(name, value if eq else None):
                    return
        if not args:
            self.error("scontrol: error: too few arguments for keyword:show")
            return
        word = args[0].lower()
        entity = word if word in _ENTITIES else None
        if entity is None:
            matches = [e for e in _ENTITIES if e.startswith(word)]
            entity = matches[0] if matches and len({m.rstrip("s") for m in matches}) == 1 else None
        if entity is None:
            self.error(f"invalid entity:{args[0]} for keyword:show ")  # 22.05's words and space
            return
        rest = args[1:]
        if self.output is not None and entity not in ("job", "jobs", "node", "nodes", "partition", "partitions"):
            # (refused rather than answered as text: a tool reading JSON would choke on it)
            self.error(f"scontrol: error: {self.output.mime.upper()} output of show {entity} is not supported by plurm")
            return
        if entity in ("job", "jobs"):
            scontrol_show.show_jobs(self, rest)
        elif entity in ("node", "nodes"):
            scontrol_show.show_nodes(self, rest)
        elif entity in ("partition", "partitions"):
            scontrol_show.show_partitions(self, rest)
        elif entity == "config":
            self.show_config(rest)
        elif entity == "hostnames":
            self.show_hostnames(rest)
        elif entity in ("hostlist", "hostlistsorted"):
            self.show_hostlist(rest, entity == "hostlistsorted")
        elif entity in ("step", "steps"):
            self.show_steps(rest)
        elif entity in ("reservation", "reservations"):
            scontrol_resv.show(self, rest)
        elif entity == "licenses":
            from plurm.tools.scontrol_licenses import show_licenses

            show_licenses(self, rest)
        else:
            self.error(f"scontrol: error: show {entity} is not supported by plurm")

    def show_config(self, rest: list[str]) -> None:
        from plurm.wire.client import ClientError, read_settings

        try:
            reply = self.request("config", {})
        except ClientError as exc:
            self.error(f"slurm_load_ctl_conf error: {exc}")
            return
        options = reply.get("options", {})
        host = "localhost"
        try:
            host = read_settings().host
        except ClientError:
            pass
        from plurm.tools.showconfig import format_config

        text = format_config(options, reply.get("path") or "", reply.get("cluster") or "", time.time(), host)
        if rest:
            wanted = rest[0].lower()
            lines = [line for line in text.splitlines()[1:] if line.split(" ", 1)[0].lower() == wanted]
            sys.stdout.write("".join(line + "\n" for line in lines))
            return
        sys.stdout.write(text)

    def show_hostnames(self, rest: list[str]) -> None:
        from plurm.grammar.hostlist import HostlistError, expand

        # 22.05 reads SLURM_NODELIST only (checked: SLURM_JOB_NODELIST alone gives "host list
        # is empty"); the usual `scontrol show hostnames $SLURM_JOB_NODELIST` names it
        text = rest[0] if rest else os.environ.get("SLURM_NODELIST")
        if not text:
            sys.stderr.write("scontrol: error: host list is empty\n")  # and exit 0, as 22.05
            return
        text = _read_hostfile(text)
        try:
            names = expand(text)
        except HostlistError:
            self.error(f"scontrol: error: Invalid hostlist: {text}")
            return
        sys.stdout.write("".join(name + "\n" for name in names))

    def show_hostlist(self, rest: list[str], sort: bool) -> None:
        from plurm.grammar.hostlist import HostlistError, compress, expand

        if not rest:
            self.error("scontrol: error: host list is empty")
            return
        text = _read_hostfile(rest[0])
        try:
            names = expand(text)
            result = compress(names, sort=sort)  # hostlist keeps the given order
        except HostlistError:
            self.error(f"scontrol: error: Invalid hostlist: {text}")
            return
        sys.stdout.write(result + "\n")

    def show_steps(self, rest: list[str]) -> None:
        from plurm.tools.scontrol_steps import show_steps

        out, err, rc = show_steps(self.request, rest, self.oneliner)
        sys.stdout.write(out)
        sys.stderr.write(err)
        self.rc = rc or self.rc

    # ------------------------------------------------------------------ update / hold
    def _job_update(self, job_ids: list[str], fields: dict[str, str], what: str, summary: str | None = None) -> None:
        """Send one update; each refused job is named.  ``summary``: the word of the line
        Slurm's hold and release add after a refusal, with its error (``slurm_suspend``)."""
        from plurm.wire.client import ClientError

        try:
            reply = self.request("update_job", {"job_ids": job_ids, "fields": fields})
        except ClientError as exc:
            self.error(f"{what} error: {exc}")
            return
        for result in reply.get("results", []):
            if "error" in result:
                if self.quiet:
                    self.rc = 1
                    continue
                self.error(f"{result['error']} for job {result.get('job')}")
                if summary and result.get("code") in ("AccessDenied", "InvalidJobId"):
                    # the call's own error, after each such job's line (22.05; a job that is
                    # no longer pending gets its line only)
                    self.error(f"{summary} error: {result['error']}")

    def cmd_hold(self, args: list[str]) -> None:
        # An admin hold when the controller finds the sender an operator, else a user hold.
        self._hold(args, "admin")

    def cmd_uhold(self, args: list[str]) -> None:
        self._hold(args, "user")

    def _resolve_names(self, words: list[str]) -> list[str]:
        """hold/release accept job names as well as ids: a name means its pending jobs."""
        import re

        ids: list[str] = []
        names = [w for w in words if not re.fullmatch(r"\d+(_(\d+|\[[\d,\-]+\]))?", w)]
        ids = [w for w in words if w not in names]
        if names:
            from plurm.wire.client import ClientError

            try:
                reply = self.request("job_info", {"names": names, "states": ["PENDING"]})
            except ClientError as exc:
                self.error(f"slurm_load_jobs error: {exc}")
                return ids
            found = [str(j["job_id"]) for j in reply.get("jobs", [])]
            if not found:
                for name in names:
                    self.error(f"Invalid job id specified for job {name}")
            ids.extend(found)
        return ids

    def _hold(self, args: list[str], kind: str) -> None:
        words = _job_list(args)
        if not words:
            self.error("scontrol: error: too few arguments for keyword:hold")
            return
        ids = self._resolve_names(words)
        if ids:
            self._job_update(ids, {"hold": kind}, "slurm_update", "slurm_suspend")

    def cmd_release(self, args: list[str]) -> None:
        words = _job_list(args)
        if not words:
            self.error("scontrol: error: too few arguments for keyword:release")
            return
        ids = self._resolve_names(words)
        if ids:
            self._job_update(ids, {"release": "1"}, "slurm_update", "slurm_suspend")

    def cmd_update(self, args: list[str]) -> None:
        if args and args[0].lower() in ("reservation", "reservations"):  # "update reservation Name=..."
            args = args[1:]
        if len(args) > 1 and args[0].lower() == "job" and "=" not in args[1]:  # "update job 12 K=V" (22.05 too)
            args = [f"JobId={args[1]}", *args[2:]]
        pairs: list[tuple[str, str]] = []
        for arg in args:
            key, sep, value = arg.partition("=")
            if not sep:
                self.error(f"scontrol: error: Invalid input: {arg}")
                self.error("Request aborted")
                return
            pairs.append((key, value))
        if not pairs:
            self.error("scontrol: error: too few arguments for keyword:update")
            return
        first = pairs[0][0].lower()
        if first in ("jobid", "job") or first == "reservation" and "jobid" in {k.lower() for k, _ in pairs}:
            self._update_job(pairs)
        elif first in ("nodename", "node"):
            self._update_node(pairs)
        elif first in ("reservationname", "reservation"):
            scontrol_resv.update(self, pairs)
        else:
            keys = {k.lower() for k, _ in pairs}
            if "jobid" in keys:
                self._update_job(pairs)
            elif "nodename" in keys:
                self._update_node(pairs)
            elif keys & {"reservationname", "reservation"}:
                scontrol_resv.update(self, pairs)
            else:
                self.error("No valid entity in update command")
                self.error('Input line must include "NodeName", "PartitionName", "Reservation=<name>", '
                           '"JobId", "StepId", "FrontendName", "SuspendExcNodes", "SuspendExcParts", or '
                           '"SuspendExcStates"')

    def _update_job(self, pairs: list[tuple[str, str]]) -> None:
        ids: list[str] = []
        fields: dict[str, str] = {}
        for key, value in pairs:
            lowered = key.lower()
            if lowered in ("jobid", "job"):
                ids.extend(v for v in value.split(",") if v)
            elif lowered in _JOB_KEYS:
                from plurm.tools.scontrol_values import check_job_value

                checked = check_job_value(_JOB_KEYS[lowered], value)
                if checked is None:
                    self.rc = 1
                    return
                fields[_JOB_KEYS[lowered]] = checked
            else:
                self.error(f"Update of this parameter is not supported: {key}={value}")
                self.error("Request aborted")
                return
        if not fields:
            self.error("No changes specified")
            return
        self._job_update(ids, fields, "slurm_update")

    def _update_node(self, pairs: list[tuple[str, str]]) -> None:
        from plurm.tools import scontrol_node

        scontrol_node.update_node(self, pairs)


def _slurm_message(text: str) -> str:
    """Slurm says "Unable to contact slurm controller (connect failure)" without the OS detail."""
    marker = "(connect failure)"
    if marker in text:
        return text[:text.index(marker) + len(marker)]
    return text


def _read_hostfile(text: str) -> str:
    """scontrol accepts an absolute path to a file of host names."""
    if text.startswith("/"):
        try:
            with open(text, encoding="utf-8") as handle:
                return ",".join(handle.read().split())
        except OSError:
            return text
    return text


def _job_list(args: list[str]) -> list[str]:
    ids: list[str] = []
    for arg in args:
        ids.extend(part for part in arg.replace(",", " ").split() if part)
    return ids


# ------------------------------------------------------------------ entry point
def _split_line(line: str) -> list[str]:
    import shlex

    try:
        return shlex.split(line)
    except ValueError:
        return line.split()


# scontrol's getopt table: long name -> (key, has_arg); --usage is --help
_SHORT = "+adFhM:oQu:vV"
_LONG = {
    "all": ("a", 0), "details": ("d", 0), "federation": ("federation", 0), "future": ("F", 0),
    "help": ("h", 0), "hide": ("hide", 0), "local": ("local", 0), "cluster": ("M", 1),
    "clusters": ("M", 1), "oneliner": ("o", 0), "quiet": ("Q", 0), "sibling": ("sibling", 0),
    "uid": ("u", 1), "verbose": ("v", 0), "version": ("V", 0), "usage": ("h", 0),
    "json": ("json", 2), "yaml": ("yaml", 2),
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    sc = Scontrol()
    sc.argv = list(argv)
    # getopt_long with '+': the first word that is not an option starts the command
    it = iter_getopt(PROG, argv, Table(_SHORT, _LONG))
    while True:
        try:
            parsed = next(it)
            key = parsed.key
        except StopIteration as stop:
            words: list[str] = stop.value
            break
        except OptionError as exc:
            sys.stderr.write(f"{exc.message}\n{try_help(PROG)}\n")
            return 1
        if key == "a":
            sc.all = True
        elif key == "F":
            sc.future = True
        elif key == "d":
            sc.details += 1
        elif key == "o":
            sc.oneliner = True
        elif key == "Q":
            sc.quiet = True
        elif key == "v":
            sc.verbose += 1
        elif key == "V":
            sc.cmd_version([])
            return 0
        elif key in ("json", "yaml"):
            if not sc.take_output(key, parsed.value):
                return sc.rc
            sc.cli_output = sc.output
        elif key == "h":
            from plurm.tools.scontrol_help import HELP

            sys.stdout.write(HELP)
            return 0
        # -F, -M, -u, --federation, --hide, --local, --sibling: one cluster, no federation,
        # requests run as the caller: accepted, nothing to do
    try:
        if words:
            return sc.run_words(words)
        # Interactive mode: one command per line from standard input.
        interactive = sys.stdin.isatty()
        while True:
            if interactive:
                sys.stdout.write(f"{PROG}: ")
                sys.stdout.flush()
            line = sys.stdin.readline()
            if not line:
                break
            sc.run_words(_split_line(line))
        return sc.rc
    except _Exit as exc:
        return exc.code
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
