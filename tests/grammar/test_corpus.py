"""Drive every case of the sbatch acceptance corpus (../shared/corpus/sbatch) through
parse_sbatch: directives, reading stops, ignored look-alikes, effective options (raw and
normalized), hetjob components, command-line/environment precedence, and the exact error
lines of the invalid scripts."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from plurm.grammar.options import OptionError
from plurm.grammar.structvalues import parse_mail_type
from plurm.tools.sbatch_cli import normalized, parse_sbatch

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "sbatch"
CASES = sorted(CORPUS.glob("*.expect.json")) if CORPUS.is_dir() else []
pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus folder missing: {CORPUS}")


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def _effective(raw: dict, typed: dict) -> dict:
    opts = {k: v for k, v in raw.items() if k != "verbose"}
    norm = {}
    for k, v in opts.items():
        n = normalized(k, typed.get(k), v)
        if n is not None:
            norm[k] = n
    return {"options": opts, "normalized": norm}


def _want_effective(block: dict) -> dict:
    opts = dict(block["options"])
    if "tasks-per-node" in opts:
        opts["ntasks-per-node"] = opts.pop("tasks-per-node")
    return {"options": opts, "normalized": block["normalized"]}


def _as_2205(notes: list[dict], got: dict, want: dict) -> None:
    """The corpus states current Slurm (25.05+) and notes where 24.11 and older differ;
    plurm follows 22.05.8: repeated --mail-type values add up (tests/tools/reference/cli,
    sbatch-mail-twice).  The note's value is compared as the set of events it names (its
    spelling, ALL or the events, is the note's own), then both sides drop the option."""
    for note in notes:
        if note["applies_to"] != "Slurm <= 24.11":
            continue
        for key, value in note.get("effective_options", {}).items():
            if key != "mail-type":
                want["options"][key] = value
                continue
            assert set(got["normalized"]["mail-type"]["types"]) == \
                set(parse_mail_type(value)["types"])
            for side in (got, want):
                side["options"].pop(key)
                side["normalized"].pop(key)


@pytest.mark.parametrize("case", CASES, ids=[c.name.replace(".expect.json", "") for c in CASES])
def test_corpus_case(case: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    e = _load(case)
    monkeypatch.chdir(CORPUS)
    if not e["valid"]:
        with pytest.raises(OptionError) as info:
            parse_sbatch([e["script"]], {})
        want = [m.replace("<script path>", e["script"]) for m in e["slurm_message"]]
        assert info.value.lines == want
        assert info.value.exit_code != 0
        return
    req = parse_sbatch([e["script"]], {})
    si = req.script_info
    assert si is not None
    assert si.interpreter == e["interpreter"]
    assert req.directives == e["directives"]
    assert si.first_command == e["first_command"]
    assert si.not_directives == e["not_directives"]
    if e.get("components"):
        got = [dict(component=i, **_effective(r, t))
               for i, (r, t) in enumerate(zip(req.raw_components, req.components))]
        want = [dict(component=c["component"], **_want_effective(c)) for c in e["components"]]
        assert got == want
    else:
        got, want = _effective(req.raw_options, req.options), _want_effective(e["effective"])
        _as_2205(e.get("version_notes", []), got, want)
        assert got == want
    assert req.warnings == e.get("warnings", [])
    sub = e.get("submit")
    if sub:
        req = parse_sbatch(sub["argv"][1:], sub["env"])
        assert req.script_args == sub["script_arguments"]
        got, want = _effective(req.raw_options, req.options), \
            _want_effective(sub["effective_after_submit"])
        _as_2205(sub.get("version_notes", []), got, want)
        assert got == want


# ------------------------------------------------------- differential: the real sbatch -v
import os  # noqa: E402
import shutil  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402

REAL_SBATCH = shutil.which("sbatch", path="/usr/bin:/usr/local/bin")
needs_real = pytest.mark.skipif(REAL_SBATCH is None, reason="real Slurm sbatch not installed")
# lines whose value depends on the clock
_UNSTABLE = ("begin", "deadline")


def _real_conf(tmp: Path) -> Path:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    conf = tmp / "slurm.conf"
    conf.write_text(
        "ClusterName=parsecheck\nSlurmctldHost=localhost\nSlurmctldPort=%d\n"
        "AuthType=auth/munge\nSelectType=select/cons_tres\nGresTypes=gpu,mps,tmpfs\n"
        "MpiDefault=none\nNodeName=n1 CPUs=4 RealMemory=2000 Gres=gpu:4 State=UNKNOWN\n"
        "PartitionName=debug Nodes=ALL Default=YES State=UP\n" % port)
    return conf


def run_real(args: list[str], tmp: Path, env_extra: dict | None = None,
             cwd: Path | None = None, timeout: float = 1.0) -> tuple[int | None, str]:
    """(status or None when it got as far as contacting the controller, stderr)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SBATCH_", "SLURM_"))}
    env["SLURM_CONF"] = str(_real_conf(tmp))
    env.update(env_extra or {})
    try:
        p = subprocess.run([REAL_SBATCH] + args, cwd=cwd or CORPUS, env=env,
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        return None, err
    return p.returncode, p.stderr


def _blocks(text: str, prog: str = "sbatch") -> list[list[str]]:
    out, cur = [], None
    for line in text.splitlines():
        if line == f"{prog}: defined options":
            cur = []
        elif line == f"{prog}: end of defined options":
            out.append(cur)
            cur = None
        elif cur is not None and not line.startswith(f"{prog}: ----"):
            key = line[len(prog) + 2:].split(" ", 1)[0]
            if key not in _UNSTABLE:
                cur.append(line)
    return out


VALID = [c for c in CASES if ".invalid." not in c.name]


@pytest.mark.compat
@needs_real
@pytest.mark.parametrize("case", VALID, ids=[c.name.split(".")[0] for c in VALID])
def test_verbose_block_matches_real_sbatch(case: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from plurm.tools.sbatch_verbose import format_verbose_block
    e = _load(case)
    monkeypatch.chdir(CORPUS)
    argv, env = ["-v", e["script"]], {}
    if e.get("submit"):
        argv, env = ["-v"] + e["submit"]["argv"][1:], e["submit"]["env"]
    _, err = run_real(argv, tmp_path, env)
    ours = format_verbose_block(parse_sbatch(argv, env))
    assert _blocks(ours) == _blocks(err)


ERROR_PROBES = [
    "--ntasks=abc", "--ntasks=-1", "-N 0", "-N abc", "-N 3-2", "-N 2-", "-N -4", "-N 1k",
    "-c 0", "-c abc", "--mem=-5", "--mem=5X", "--mem=1.5G", "--mem=96gb", "--mem=10b",
    "--mem=+10", "--mem-per-cpu=abc", "--time=-5", "--time=abc", "--time=1:0:0:0",
    "--time=1::", "--time=5abc", "--time=1-abc", "--time=:5", "--time-min=abc",
    "--nice=abc", "--begin=notatime", "--begin=now+1hour", "--begin=tomorrow",
    "--signal=FOO", "--signal=B:USR1@abc", "--signal=0", "--signal=99", "--signal=R:USR1",
    "--open-mode=foo", "--open-mode=Tr", "--mail-type=bogus", "--mail-type=start,end",
    "--mail-type=none", "--exclusive=foo", "--exclusive=USER", "--cpus=4", "--mail=x",
    "--ntasks-per-node=0", "--ntasks-per-core=0", "--mincpus=0", "--cpus-per-gpu=0",
    "--distribution=foo", "-m plane=4", "-m block:cyclic:fcyclic,pack", "--tmp=abc",
    "--hold=yes", "--time", "-t", "--bogus-option", "-Z", "-I", "-K",
    "--mem=1 --mem-per-cpu=1", "--core-spec=1 --thread-spec=1", "--wrap=true ok.sh",
    "--gres=gpu:1,mps:50", "--export=ALL,A=b", "--parsable", "-H", "--test-only -n2",
    "--hint=foo", "--gres-flags=foo", "--wait-all-nodes=2", "--profile=foo", "--no-kill=on",
    "--kill-on-invalid-dep=foo", "--mem-bind=foo", "--gpu-bind=foo", "--acctg-freq=foo",
    "--cpu-freq=foo", "--core-spec=abc", "--delay-boot=abc", "--switches=abc",
    "--sockets-per-node=0", "--threads-per-core=abc", "--hint=nomultithread",
    "--gres-flags=disable-binding", "--cpu-freq=high", "--mem-bind=local",
    "--gpu-bind=closest", "--acctg-freq=task=30", "--switches=1@10:00", "--no-kill=off",
    "--nice", "--exclusive", "--propagate", "--get-user-env", "-N 4 -n 2", "-N 2-4 -n 3",
    "--cpus-per-gpu=2 -c 2", "--requeue --no-requeue", "--exclusive --oversubscribe",
    "--", "-N2 :", "-N2 : -n1", "-vvv", "-J", "-Jx -p", "--nodes=", "--time=", "--job-name=",
    "--export=", "--array=", "--gres=", "--gpus=", "--dependency=", "--signal=",
    "--mail-type=", "--wrap=", "--comment=", "-c ''", "--chdir=/nonexistent",
    "--output=", "--begin=", "--nice=", "--exclusive=", "--mem=", "-a 1-3,5 -a 7",
    "--array=0-1000", "--array=0-1001", "--array=1-10%0", "--ntasks=1k",
    "-w n[1-", "-w /nonexistent/hosts", "-x n[1-3],n5",
] + [f"--{letter}=1" for letter in "abcdefghiklmnopqrstuvwxyz"] + [
    "--clu=x", "--gpus-per=1", "--mem-per=1", "--ntasks-per=1", "--time-=1", "--no-=1"]


@pytest.mark.compat
@needs_real
@pytest.mark.parametrize("probe", ERROR_PROBES)
def test_errors_match_real_sbatch(probe: str, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import re
    import shlex
    (tmp_path / "ok.sh").write_text("#!/bin/bash\ntrue\n")
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(probe) + ([] if probe.endswith("ok.sh") else ["ok.sh"])
    rc, err = run_real(argv, tmp_path, cwd=tmp_path)
    noise = re.compile(r"^sbatch: (select/|accounting_storage|cred/|Number of tasks|"
                       r"error: Batch job submission failed: Unable to contact)")
    real_lines = [ln.replace(REAL_SBATCH + ":", "sbatch:") for ln in err.splitlines()
                  if not noise.match(ln)]
    try:
        req = parse_sbatch(argv, {})
    except OptionError as exc:
        if rc is None:  # real sbatch got as far as the controller
            assert "Batch job submission failed" in exc.message, exc.lines
        else:
            assert (exc.lines, exc.exit_code) == (real_lines, rc)
    else:
        assert rc is None, (rc, real_lines)
        assert req.warnings == [ln for ln in real_lines if "arning" in ln]


SBATCH_ENV = sorted({var for var, _ in __import__("plurm.grammar.options",
                                                   fromlist=["env_inputs"]).env_inputs("sbatch")})
# values "2" that real sbatch refuses only in later, cluster-side validation
_LATER = {"SBATCH_GPUS_PER_TASK", "SBATCH_GPUS_PER_SOCKET", "SBATCH_MEM_PER_GPU",
          "SBATCH_CLUSTERS", "SBATCH_POWER", "SBATCH_GRES"}


@pytest.mark.compat
@needs_real
@pytest.mark.parametrize("var", SBATCH_ENV)
def test_env_inputs_match_real_sbatch(var: str, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import re
    from plurm.tools.sbatch_verbose import format_verbose_block
    if var in _LATER:
        pytest.skip("refused by real sbatch in cluster-side validation")
    (tmp_path / "ok.sh").write_text("#!/bin/bash\ntrue\n")
    monkeypatch.chdir(tmp_path)
    rc, err = run_real(["-v", "ok.sh"], tmp_path, {var: "2"}, cwd=tmp_path)
    noise = re.compile(r"^sbatch: (select/|accounting_storage|cred/|Number of tasks|Setting|"
                       r"error: Ignoring|error: Batch job submission failed: Unable to contact)")
    try:
        req = parse_sbatch(["-v", "ok.sh"], {var: "2"})
    except OptionError as exc:
        real_lines = [ln for ln in err.splitlines() if not noise.match(ln)
                      and "defined options" not in ln and not ln.startswith("sbatch: ---")
                      and not re.match(r"sbatch: \S+\s+: ", ln)]
        assert (exc.lines, exc.exit_code) == (real_lines, rc)
    else:
        assert _blocks(format_verbose_block(req)) == _blocks(err)


SCRIPT_PROBES = [
    "#PBS -N pbsname\n#PBS -l walltime=01:30:00\n#PBS -o out.txt\n#PBS -e err.txt\n"
    "#PBS -q queue1\n#PBS -A acct",
    "#PBS -l nodes=2:ppn=4\n#PBS -l mem=4gb", "#PBS -m abe\n#PBS -M me@x",
    "#PBS -v A=1,B\n#PBS -t 1-5\n#PBS -W depend=afterok:1\n#PBS -j oe\n#PBS -h\n#PBS -p 5",
    "#PBS -l ncpus=4,pmem=100mb", "#SBATCH -J sb\n#PBS -N pb", "#PBS -N pb\n#SBATCH -J sb",
    "#PBS -l walltime=abc", "#SBATCH --ignore-pbs\n#PBS -N pb",
    '#SBATCH --comment="abc', "#SBATCH --comment=a\\ b", '#SBATCH --comment="a\\ b"',
    "#SBATCH --comment=ab\\", "#SBATCH --comment='a\"b' -J \"x\"y", "#SBATCH --nice 5",
    "#SBATCH hetjob\n#SBATCH -N 2", "#SBATCH", "#SBATCH -vv", "#SLURM -J slurmmagic",
    "#SBATCH -J a\n\n#\n   \n#SBATCH -t 5", "#SBATCH --time\n#SBATCH 10",
]


@pytest.mark.compat
@needs_real
@pytest.mark.parametrize("body", SCRIPT_PROBES)
def test_scripts_match_real_sbatch(body: str, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import re
    from plurm.tools.sbatch_verbose import format_verbose_block
    (tmp_path / "p.sh").write_text("#!/bin/bash\n" + body + "\ntrue\n")
    monkeypatch.chdir(tmp_path)
    rc, err = run_real(["-v", "p.sh"], tmp_path, cwd=tmp_path)
    noise = re.compile(r"^sbatch: (select/|accounting_storage|cred/|Number of tasks|Setting|"
                       r"error: Ignoring|error: Batch job submission failed: Unable to contact)")
    try:
        req = parse_sbatch(["-v", "p.sh"], {})
    except OptionError as exc:
        real_lines = [ln for ln in err.splitlines() if not noise.match(ln)
                      and "defined options" not in ln and not ln.startswith("sbatch: ---")
                      and not re.match(r"sbatch: \S+\s+: ", ln)]
        assert (exc.lines, exc.exit_code) == (real_lines, rc)
    else:
        assert rc is None, err
        assert _blocks(format_verbose_block(req)) == _blocks(err)


SRUN_PROBES = [
    "-N2 -n4 -l --mpi=pmi2 -t 10", "--time=abc", "-N 3-2", "--ntasks=0", "-c abc",
    "--mem=5X", "--exclusive=user", "--gres=gpu:2", "--gpus=v100:1", "--export=ALL,A=1",
    "--pty", "--cpu-bind=cores", "--overlap", "-W 30", "--bogus", "-Y", "--cpu=1",
    "--het-group=0", "-K", "-K1", "--signal=USR1@30", "-w n1 -x n2", "-J name -p debug",
    "--ntasks-per-node=2 -N1", "-vvv", "-u -X -E", "-r 1", "-T 4",
]


@pytest.mark.compat
@pytest.mark.skipif(shutil.which("srun", path="/usr/bin") is None, reason="real srun missing")
@pytest.mark.parametrize("probe", SRUN_PROBES)
def test_srun_matches_real_srun(probe: str, tmp_path: Path) -> None:
    import re
    import shlex
    from plurm.tools.sbatch_cli import parse_srun
    from plurm.tools.sbatch_verbose import format_verbose_block
    argv = ["-v"] + shlex.split(probe) + ["true"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SBATCH_", "SLURM_"))}
    env["SLURM_CONF"] = str(_real_conf(tmp_path))
    try:
        p = subprocess.run(["/usr/bin/srun"] + argv, env=env, capture_output=True, text=True,
                           timeout=1.5, cwd=tmp_path, stdin=subprocess.DEVNULL)
        rc, err = p.returncode, p.stderr
    except subprocess.TimeoutExpired as exc:
        rc = None
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
    blocks = _blocks(err, "srun")
    real_lines = [ln.replace("/usr/bin/srun:", "srun:") for ln in err.splitlines()
                  if not re.match(r"srun: (\S+\s+: |---|defined options|end of defined|"
                                  r"select/|error: Unable to allocate|Jobs? )", ln)]
    try:
        req = parse_srun(argv, {})
    except OptionError as exc:
        assert (exc.lines, exc.exit_code) == (real_lines, rc)
    else:
        assert _blocks(format_verbose_block(req, "srun"), "srun") == blocks


def _random_directive(rnd) -> str:
    opts = ["-J", "--job-name", "--comment", "-t", "--time", "-N", "--nodes", "-n", "--mem",
            "--signal", "--mail-type", "--array", "-p", "--exclusive", "--nice", "-H",
            "--gres", "--export", "--open-mode", "--dependency", "--begin", "-c", "--wckey"]
    vals = ["x", "a b", "5", "1-2", "1:30", "abc", "gpu:2", "USR1@30", "END,FAIL", "1-5%2",
            "user", "append", "afterok:1", "now+1hour", "4G", "", "#x", "a#b", "2-00:00"]
    quotes = ['"', "'", "\\", ""]
    words = []
    for _ in range(rnd.randint(1, 3)):
        o = rnd.choice(opts)
        v = rnd.choice(vals)
        q = rnd.choice(quotes)
        v = f"{q}{v}{q}" if q != "\\" else v.replace(" ", "\\ ").replace("#", "\\#")
        sep = rnd.choice(["=", " ", ""]) if o.startswith("--") else rnd.choice([" ", ""])
        words.append(o if o in ("-H", "--exclusive") and rnd.random() < 0.5 else o + sep + v)
    tail = rnd.choice(["", "  # comment", "\t#c", " \\"])
    return "#SBATCH " + " ".join(words) + tail


@pytest.mark.slow
@pytest.mark.compat
@needs_real
def test_random_scripts_match_real_sbatch(tmp_path: Path) -> None:
    """200 random directive blocks (seeded) through both parsers, 12 at a time."""
    import random
    import re
    from concurrent.futures import ThreadPoolExecutor
    from plurm.tools.sbatch_verbose import format_verbose_block
    rnd = random.Random(int(os.environ.get("PLURM_FUZZ_SEED", "1129")))
    cases = []
    for k in range(200):
        d = tmp_path / f"c{k}"
        d.mkdir()
        body = "\n".join(_random_directive(rnd) for _ in range(rnd.randint(1, 3)))
        (d / "p.sh").write_text("#!/bin/bash\n" + body + "\ntrue\n")
        cases.append((d, body))
    with ThreadPoolExecutor(12) as pool:
        real = list(pool.map(lambda c: run_real(["-v", "p.sh"], c[0], cwd=c[0], timeout=2.0),
                             cases))
    noise = re.compile(r"^sbatch: (select/|accounting_storage|cred/|Number of tasks|Setting|"
                       r"error: Ignoring|error: Batch job submission failed: Unable to contact)")
    problems = []
    cwd = os.getcwd()
    for (d, body), (rc, err) in zip(cases, real):
        os.chdir(d)
        try:
            try:
                req = parse_sbatch(["-v", "p.sh"], {}, gres_types=["gpu", "mps", "tmpfs"])
            except OptionError as exc:
                real_lines = [ln.replace(REAL_SBATCH + ":", "sbatch:") for ln in err.splitlines()
                              if not noise.match(ln) and "defined options" not in ln
                              and not ln.startswith("sbatch: ---")
                              and not re.match(r"sbatch: \S+\s+: ", ln)]
                if (exc.lines, exc.exit_code) != (real_lines, rc) and not (
                        rc is None and "Batch job submission failed" in exc.message):
                    problems.append((body, exc.lines, exc.exit_code, real_lines, rc))
            else:
                if rc is not None or _blocks(format_verbose_block(req)) != _blocks(err):
                    problems.append((body, _blocks(format_verbose_block(req)), rc, err))
        finally:
            os.chdir(cwd)
    assert not problems, "\n\n".join(map(repr, problems))


@pytest.mark.slow
@pytest.mark.compat
@needs_real
def test_random_command_lines_match_real_sbatch(tmp_path: Path) -> None:
    """150 random command lines + SBATCH_* variables over a small script, both parsers."""
    import random
    import re
    from concurrent.futures import ThreadPoolExecutor
    from plurm.grammar.options import env_inputs
    from plurm.tools.sbatch_verbose import format_verbose_block
    rnd = random.Random(int(os.environ.get("PLURM_FUZZ_SEED", "1129")))
    opts = ["-J", "--job-name", "-t", "--time", "-N", "-n", "--mem", "--mem-per-cpu",
            "--signal", "--mail-type", "-a", "-p", "--exclusive", "--nice", "-H", "--gres",
            "--export", "--open-mode", "-d", "--begin", "-c", "--ntasks-per-node", "-w",
            "--parsable", "--requeue", "--no-requeue", "--hint", "--distribution", "-o"]
    vals = ["x", "5", "1-2", "1:30", "abc", "gpu:2", "USR1@30", "END,FAIL", "1-5%2", "user",
            "append", "afterok:1", "4G", "", "0", "n[1-3]", "block", "nomultithread", "%j.out"]
    # (SBATCH_CLUSTERS would make real sbatch ask a database)
    envs = sorted({v for v, _ in env_inputs("sbatch")} - {"SBATCH_CLUSTERS"})
    (tmp_path / "s.sh").write_text("#!/bin/bash\n#SBATCH -J script -t 10 --mem=1G\ntrue\n")
    cases = []
    for _ in range(150):
        argv = []
        for _ in range(rnd.randint(1, 4)):
            o, v = rnd.choice(opts), rnd.choice(vals)
            form = rnd.randint(0, 2)
            if o.startswith("--") and form == 0:
                argv.append(f"{o}={v}")
            elif form == 1 and v:
                argv += [o, v]
            else:
                argv.append(o + v if not o.startswith("--") else o)
        env = {rnd.choice(envs): rnd.choice(vals)} if rnd.random() < 0.5 else {}
        cases.append((["-v"] + argv + ["s.sh"], env))
    confs = []
    for k in range(len(cases)):
        confs.append(tmp_path / f"conf{k}")
        confs[-1].mkdir()
    with ThreadPoolExecutor(12) as pool:   # one slurm.conf folder per case: no races
        real = list(pool.map(lambda c: run_real(c[0][0], c[1], c[0][1], cwd=tmp_path,
                                                timeout=2.0), zip(cases, confs)))
    noise = re.compile(r"^sbatch: (select/|accounting_storage|cred/|Number of tasks|Setting|"
                       r"error: Ignoring|error: Batch job submission failed: Unable to contact)")
    problems = []
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        for (argv, env), (rc, err) in zip(cases, real):
            real_lines = [ln.replace(REAL_SBATCH + ":", "sbatch:") for ln in err.splitlines()
                          if not noise.match(ln) and "defined options" not in ln
                          and not ln.startswith("sbatch: ---")
                          and not re.match(r"sbatch: \S+\s+: ", ln)]
            try:
                req = parse_sbatch(argv, env, gres_types=["gpu", "mps", "tmpfs"])
            except OptionError as exc:
                if (exc.lines, exc.exit_code) != (real_lines, rc) and not (
                        rc is None and "Batch job submission failed" in exc.message):
                    problems.append((argv, env, exc.lines, exc.exit_code, real_lines, rc))
            else:
                ours = _blocks(format_verbose_block(req))
                if rc is not None or ours != _blocks(err):
                    problems.append((argv, env, ours, rc, real_lines, _blocks(err)))
    finally:
        os.chdir(cwd)
    assert not problems, "\n\n".join(map(repr, problems))
