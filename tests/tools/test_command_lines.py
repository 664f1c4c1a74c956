"""The user commands' command lines through the kit (plurm.common.cli): glibc's rules and
words where the commands used to differ (abbreviated aliases, ambiguity, options after an
operand, the ones that stop at the command's first word)."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

import pytest

from plurm.common.cli import Usage
from plurm.tools import sacct, sacctmgr, scancel, scontrol, sinfo, sprio, squeue, sshare
from plurm.tools.sbatch_cli import parse_srun

TRY = 'Try "{} --help" for more information\n'


def _main(main, argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("mod,argv,line", [
    (squeue, ["--bogus=1"], "squeue: unrecognized option '--bogus=1'"),
    (sinfo, ["--no"], "sinfo: option '--no' is ambiguous; possibilities: '--nodes' '--noconvert' "
                      "'--noheader'"),
    (sprio, ["-S"], "sprio: option requires an argument -- 'S'"),
])
def test_usage_errors(mod, argv: list[str], line: str) -> None:
    with pytest.raises(Usage) as info:
        mod.parse_args(argv, environ={})
    assert (info.value.text, info.value.code) == (line + "\n" + TRY.format(mod.PROG), 1)


def test_permutation_in_squeue() -> None:
    opts = squeue.parse_args(["-h", "-j", "12", "--use", "root"], environ={})
    assert opts.noheader and opts.jobs == ["12"] and opts.users == ["root"]


def test_scancel_aliases_abbreviate() -> None:
    opts = scancel.parse_args(["--clus=a", "--jobn=x", "12", "--sig", "USR1"], environ={})
    assert (opts.names, opts.job_ids, opts.signal) == (["x"], ["12"], 10)
    with pytest.raises(scancel.UsageError) as info:
        scancel.parse_args(["--s=1"], environ={})
    assert info.value.lines == ["scancel: option '--s=1' is ambiguous; possibilities: "
                                "'--sibling' '--signal' '--state'", TRY.format("scancel").strip()]


def test_sacct_aliases_and_ambiguity() -> None:
    assert sacct.parse_args(["--uid=a", "--user", "b", "-X"]).users == ["a", "b"]
    rc, out, err = _main(sacct.main, ["--us=a"])   # 22.05.8's sacct adds no "Try" line
    assert rc == 1 and err == ("sacct: option '--us=a' is ambiguous; possibilities: "
                               "'--use-local-uid' '--usage' '--user'\n")


def test_scontrol_stops_at_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLURM_JOB_NODELIST", raising=False)
    assert _main(scontrol.main, ["-Fo", "show", "hostnames", "n[1-2]", "-v"]) == (0, "n1\nn2\n", "")
    rc, out, err = _main(scontrol.main, ["-FV"])   # -F is a flag: the cluster goes on
    assert rc == 0 and out == "slurm 22.05.8\n"
    assert _main(scontrol.main, ["--h"]) == (
        1, "", "scontrol: option '--h' is ambiguous; possibilities: '--help' '--hide'\n"
               + TRY.format("scontrol"))
    assert _main(scontrol.main, ["-M"]) == (
        1, "", "scontrol: option requires an argument -- 'M'\n" + TRY.format("scontrol"))


def test_sacctmgr_and_sshare_options() -> None:
    assert _main(sacctmgr.main, ["-x"]) == (
        1, "", "sacctmgr: invalid option -- 'x'\n" + TRY.format("sacctmgr"))
    assert _main(sacctmgr.main, ["-V"])[1] == "slurm 22.05.8\n"
    assert _main(sshare.main, ["--bogus"]) == (
        1, "", "sshare: unrecognized option '--bogus'\n" + TRY.format("sshare"))
    assert _main(sshare.main, ["--vers"])[1] == "slurm 22.05.8\n"


def test_srun_knows_its_own_job_name() -> None:
    req = parse_srun(["-lJstep", "hostname", "-J", "x"], {"SLURM_JOB_NAME": "job"})
    assert "job-name" in req.cmdline_keys and req.command == ["hostname", "-J", "x"]
    req = parse_srun(["hostname"], {"SLURM_JOB_NAME": "job"})
    assert "job-name" not in req.cmdline_keys
