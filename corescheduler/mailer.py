"""The controller's side of job mail: run MailProg for each ``Mail`` the core decided.

As slurmctld calls it: ``MailProg -s <subject> <user>`` with nothing on stdin (the body is
empty) and the job in the environment (SLURM_JOB_ID, SLURM_JOB_USER, SLURM_JOB_NAME,
SLURM_JOB_STATE, SLURM_JOB_MAIL_TYPE; see slurm.conf(5) MailProg).  ``MailDomain`` qualifies a
user name that has no ``@``.  MailProg runs as a child process that the loop never waits
for: ``reap`` (each loop turn) collects the ones that ended and logs a failing one; one that
cannot be started (missing, not executable) is logged at once; one still running after
``MAIL_TIMEOUT_S`` is killed, so that a stuck mailer cannot pile up processes.  Beyond
``MAX_CHILDREN`` running at once, mails wait in a bounded queue.
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
from collections import deque
from collections.abc import Iterable

from plurm.corescheduler.mail import Mail

log = logging.getLogger("plurmctld")

DEFAULT_MAIL_PROG = "/bin/mail"
MAIL_TIMEOUT_S = 60.0
MAX_CHILDREN = 32
MAX_WAITING = 10000


def default_mail_prog() -> str:
    """slurm.conf(5): /bin/mail, or /usr/bin/mail when only that one exists."""
    if not os.path.exists(DEFAULT_MAIL_PROG) and os.path.exists("/usr/bin/mail"):
        return "/usr/bin/mail"
    return DEFAULT_MAIL_PROG


class Mailer:
    def __init__(self, prog: str | None, domain: str | None = None) -> None:
        self.configure(prog, domain)
        self.children: list[tuple[subprocess.Popen, float, Mail]] = []
        self.waiting: deque[Mail] = deque(maxlen=MAX_WAITING)

    def configure(self, prog: str | None, domain: str | None) -> None:
        """MailProg and MailDomain (at start, and again at scontrol reconfigure)."""
        self.prog = prog or default_mail_prog()
        self.domain = (domain or "").strip() or None

    def address(self, user: str) -> str:
        return f"{user}@{self.domain}" if self.domain and "@" not in user else user

    def send(self, mails: Iterable[Mail]) -> None:
        """Start MailProg for each mail (or queue it behind the ones running); never blocks."""
        self.waiting.extend(mails)
        self.reap()

    def _spawn(self, mail: Mail) -> None:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **mail.env}
        try:
            child = subprocess.Popen([self.prog, "-s", mail.subject, self.address(mail.user)],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, env=env, close_fds=True, start_new_session=True)
        except OSError as exc:
            log.error("job %s: MailProg %s could not be run: %s", mail.job_id, self.prog, exc)
            return
        self.children.append((child, time.monotonic(), mail))

    def reap(self) -> None:
        """Collect the MailProg children that ended (non-blocking), kill the stuck ones,
        start waiting mails where there is room."""
        now = time.monotonic()
        alive = []
        for child, started, mail in self.children:
            status = child.poll()
            if status is None and now - started > MAIL_TIMEOUT_S:
                log.error("job %s: MailProg %s still running after %.0f s: killed", mail.job_id, self.prog,
                          MAIL_TIMEOUT_S)
                child.kill()
                child.wait()
                continue
            if status is None:
                alive.append((child, started, mail))
            elif status != 0:
                log.error("job %s: MailProg %s exited with status %s (subject %r)", mail.job_id, self.prog,
                          status, mail.subject)
        self.children = alive
        while self.waiting and len(self.children) < MAX_CHILDREN:
            self._spawn(self.waiting.popleft())

    def close(self, wait_s: float = 2.0) -> None:
        """At shutdown: give the running ones a moment, then leave them (they are sessions of their own)."""
        deadline = time.monotonic() + wait_s
        while self.children and time.monotonic() < deadline:
            self.reap()
            time.sleep(0.05)
