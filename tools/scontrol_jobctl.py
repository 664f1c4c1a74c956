"""scontrol requeue, requeuehold, suspend and resume (Slurm 22.05's arguments, words and exit codes).

``requeue|requeuehold [Incomplete] [State=SpecialExit] <job_list> ...`` and
``suspend|resume <job_list> ...``: each argument is a job list (ids separated by commas or
blanks, ``12_[1-3]`` an array's tasks, an optional ``JobId=``), one request each.  A job's
refusal reads ``MESSAGE for job ID``, an array's outcomes ``ARRAY_TASKS: MESSAGE`` (every
outcome when they differ, as Slurm's job array response); any refusal makes the exit
status 1, -Q keeps the words back.  State=SpecialExit is taken as the hold alone (plurm has
no SPECIAL_EXIT state).  Who may do what is the controller's (corescheduler/core_requeue.py).

Stdlib only, like scontrol itself (the host list grammar is loaded for ``1[2-4]`` alone).
"""

from __future__ import annotations

import sys
from typing import Any


def requeue(sc: Any, args: list[str], word: str, hold: bool) -> None:
    """The options come first (Slurm's parse_requeue_flags), then the job lists."""
    if not args:
        fail(sc, f"too few arguments for keyword:{word}")
        return
    incomplete = special_exit = False
    start = 0
    for arg in args:
        flag = requeue_flag(arg)
        if flag is None:
            break
        incomplete = incomplete or flag == "incomplete"
        special_exit = special_exit or flag == "special_exit"
        start += 1
    for arg in args[start:]:
        if not arg and not hold:  # (scontrol_requeue's empty argument: exit 1, no words)
            sc.rc = 1
            continue
        control(sc, "requeue_job", arg, {"hold": hold or special_exit, "incomplete": incomplete})


def suspend(sc: Any, args: list[str], word: str, resume: bool) -> None:
    if not args:
        fail(sc, f"too few arguments for keyword:{word}")
        return
    for arg in args:
        # scontrol 22.05.8 names a job it does not know (never was, or purged) so in suspend/resume.
        control(sc, "suspend_job", arg, {"resume": resume},
                words={"Invalid job id specified": "Unexpected message received"})


def fail(sc: Any, line: str) -> None:
    sc.rc = 1
    if not sc.quiet:
        sys.stderr.write(line + "\n")


def control(sc: Any, msg_type: str, arg: str, body: dict, words: dict[str, str] | None = None) -> None:
    """One job list (one argument), one request; the refusals in Slurm's words (``words``:
    this command's own wording of an error)."""
    words = words or {}
    from plurm.wire.client import ClientError

    for prefix in ("jobid=", "job="):
        if arg[:len(prefix)].lower() == prefix:
            arg = arg[len(prefix):]
    tokens = job_tokens(arg)
    if tokens is None:
        fail(sc, f"Invalid job id specified for job {arg}")
        return
    if not tokens:
        return
    try:
        reply = sc.request(msg_type, dict(body, job_ids=tokens))
    except ClientError as exc:
        marker = "(connect failure)"  # (Slurm's words stop there: no OS detail)
        text = str(exc)
        text = text[:text.index(marker) + len(marker)] if marker in text else text
        for token in tokens:
            fail(sc, f"{words.get(text, text)} for job {token}")
        return
    for result in reply.get("results", []):
        entries = result.get("array")
        if entries is not None:
            if len(entries) == 1 and entries[0].get("error") is None:
                continue
            for entry in entries:
                fail(sc, f"{entry['job']}: {entry.get('error') or 'No error'}")
        elif "error" in result:
            fail(sc, f"{words.get(result['error'], result['error'])} for job {result.get('job')}")


def requeue_flag(arg: str) -> str | None:
    """requeue's options: any prefix of Incomplete, or State=SpecialExit / State=SE (any
    case); None: a job list."""
    if "incomplete".startswith(arg.lower()):
        return "incomplete"
    if arg[:6].lower() != "state=":
        return None
    value = arg[6:].lower()
    return "special_exit" if value.startswith("specialexit") or value.startswith("se") else None


def job_tokens(text: str) -> list[str] | None:
    """A job list as scontrol splits it (Slurm's _is_job_id and _next_job_id): ids separated
    by commas or blanks outside brackets; "12_[1-3]" is sent as "12_1-3", "1[2-4]" as 12, 13
    and 14; None when it is not a job list at all."""
    chars = list(text)
    have_plus = have_under = False
    depth = 0
    for i, char in enumerate(chars):
        if char == "+":
            if have_plus:
                return None
            have_plus = True
        elif char == "_":
            if have_under:
                return None
            have_under = True
        elif char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif char == "-":
            if depth == 0 and not have_under:
                return None  # a stray '-'
        elif char in ", ":
            if depth == 0:
                chars[i] = "^"
                have_plus = have_under = False
        elif not "0" <= char <= "9":
            return None
    if depth != 0:
        return None
    tokens: list[str] = []
    for token in "".join(chars).split("^"):
        if not token:
            continue
        base, sep, task = token.partition("_")
        if task.startswith("["):
            task = task[1:].split("]", 1)[0]
        bases = [base]
        if "[" in base:
            from plurm.grammar.hostlist import HostlistError, expand

            try:
                bases = expand(base)
            except HostlistError:
                bases = []
            if not bases:
                sys.stderr.write(f"scontrol: error: Invalid job id: {token}\n")
                break
        tokens.extend(f"{b}_{task}" if sep else b for b in bases)
    return tokens
