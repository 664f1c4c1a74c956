"""The shared option table, getopt_long behaviour, and sbatch/srun front ends against the
reference outputs of real Slurm 22.05 (../shared/reference/slurm-22.05)."""
from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from plurm.grammar.options import OPTIONS, PARSERS, OptionError, options_for
from plurm.tools.frontend import getopt, lookup_long
from plurm.tools.sbatch_cli import help_text, parse_sbatch, parse_srun, usage_text, version_text
from plurm.tools.sbatch_verbose import format_verbose_block

REF = Path(__file__).resolve().parents[2].parent / "shared" / "reference" / "slurm-22.05"
needs_ref = pytest.mark.skipif(not REF.is_dir(), reason=f"reference folder missing: {REF}")

OK = "#!/bin/bash\ntrue\n"


@pytest.fixture()
def ok_sh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ok.sh").write_text(OK)
    (tmp_path / "noshebang.sh").write_text("echo hi\n")
    (tmp_path / "empty.sh").write_text("")
    return tmp_path


# ------------------------------------------------------------------------- the table
def test_every_option_has_a_parser() -> None:
    for opt in OPTIONS.values():
        assert opt.parser in PARSERS, opt.name
        assert opt.arg in ("none", "required", "optional"), opt.name
        assert opt.commands, opt.name
        if opt.arg == "none":
            assert opt.parser == "flag", opt.name


def test_every_parser_is_used_or_exported() -> None:
    used = {o.parser for o in OPTIONS.values()}
    # parse_constraint serves the normalized form; the rest must be reachable from the table
    assert set(PARSERS) - used <= {"constraint", "loose_int"}


def test_short_letters_unique_per_command() -> None:
    for prog in ("sbatch", "srun", "salloc"):
        seen: dict[str, str] = {}
        for o in options_for(prog)[0].values():
            if o.short:
                assert o.short not in seen, (prog, o.short, seen.get(o.short), o.name)
                seen[o.short] = o.name


@needs_ref
def test_sbatch_help_lists_only_known_options() -> None:
    longs = set(re.findall(r"--([a-z][a-z0-9-]*)", (REF / "help_sbatch.txt").read_text()))
    longs |= set(re.findall(r"--([a-z][a-z0-9-]*)", (REF / "usage_sbatch.txt").read_text()))
    missing = {n for n in longs if n not in options_for("sbatch")[0]}
    # --mem-bind and --network appear in usage; all others must be in the table
    assert not missing, missing


def test_env_names() -> None:
    assert "SBATCH_TIMELIMIT" in OPTIONS["time"].env["sbatch"]
    assert "SALLOC_PARTITION" in OPTIONS["partition"].env["salloc"]
    assert "SLURM_NNODES" in OPTIONS["nodes"].env["srun"]
    assert "SBATCH_MEM_PER_NODE" in OPTIONS["mem"].env["sbatch"]


def test_srun_reads_slurm_nnodes_inside_an_allocation_only() -> None:
    """22.05's srun ignores SLURM_NNODES outside an allocation (=3 runs on one node, =abc
    is no error: the differential's srun-env-nodes-bad); inside one it is the default -N."""
    from plurm.tools.sbatch_cli import parse_srun

    assert parse_srun(["true"], {"SLURM_NNODES": "2", "SLURM_JOB_ID": "5"}).options["nodes"] == [2, 2]
    assert "nodes" not in parse_srun(["true"], {"SLURM_NNODES": "2"}).options
    assert "nodes" not in parse_srun(["true"], {"SLURM_NNODES": "abc"}).options


@pytest.mark.parametrize("word,name", [
    ("job", "job-name"), ("tasks", "tasks-per-node"), ("time", "time"), ("time-m", "time-min"),
    ("exclus", "exclusive"), ("part", "partition"), ("license", "licenses"),
    ("out", "output"), ("err", "error")])
def test_unique_prefixes(word: str, name: str) -> None:
    assert lookup_long("sbatch", word).name == name


def test_ambiguous_prefix() -> None:
    with pytest.raises(OptionError) as info:
        getopt("sbatch", ["--cpus=4"])
    assert info.value.lines == [
        "sbatch: option '--cpus=4' is ambiguous; possibilities: '--cpus-per-gpu' "
        "'--cpus-per-task'", 'Try "sbatch --help" for more information']
    assert info.value.exit_code == 255


@pytest.mark.parametrize("argv,line", [
    (["--hold=yes"], "sbatch: option '--hold' doesn't allow an argument"),
    (["--time"], "sbatch: option '--time' requires an argument"),
    (["-t"], "sbatch: option requires an argument -- 't'"),
])
def test_getopt_errors(argv: list[str], line: str) -> None:
    with pytest.raises(OptionError) as info:
        getopt("sbatch", argv)
    assert info.value.lines[0] == line


def test_short_glued_and_clusters() -> None:
    parsed, rest = getopt("sbatch", ["-vvN2", "-J=x", "-tasks", "s.sh", "-n", "3"])
    assert [(p.option.name, p.value) for p in parsed] == [
        ("verbose", None), ("verbose", None), ("nodes", "2"), ("job-name", "=x"),
        ("time", "asks")]
    assert rest == ["s.sh", "-n", "3"]


# ------------------------------------------------------- reference error messages / codes
def _ref_case(name: str) -> tuple[int, list[str]]:
    idx = (REF / "INDEX.md").read_text()
    m = re.search(rf"^\| {name} \| (\d+) \| `(.*)` \|$", idx, re.M)
    assert m, name
    err = REF / f"{name}.stderr.txt"
    lines = err.read_text().splitlines() if err.exists() else []
    return int(m.group(1)), lines


@needs_ref
@pytest.mark.parametrize("name,argv", [
    ("err_unknown_option", ["--bogus-option", "ok.sh"]),
    ("err_unknown_short_option", ["-Z", "ok.sh"]),
    ("err_time_abc", ["--time=abc", "ok.sh"]),
    ("err_mem_xyz", ["--mem=xyz", "ok.sh"]),
    ("err_no_shebang", ["noshebang.sh"]),
    ("err_empty_script", ["empty.sh"]),
    ("err_missing_script_file", ["does-not-exist.sh"]),
    ("err_ntasks_0", ["--ntasks=0", "ok.sh"]),
    ("err_array_too_big", ["--array=0-5000", "ok.sh"]),
    ("err_array_bad", ["--array=x-y", "ok.sh"]),
    ("err_dependency_syntax", ["--dependency=bogus", "ok.sh"]),
    ("err_begin_bad", ["--begin=notatime", "ok.sh"]),
    ("err_wrap_and_script", ["--wrap", "true", "ok.sh"]),
])
def test_reference_errors(ok_sh: Path, name: str, argv: list[str]) -> None:
    rc, lines = _ref_case(name)
    with pytest.raises(OptionError) as info:
        parse_sbatch(argv, {})
    assert info.value.lines == lines
    assert info.value.exit_code == rc


@needs_ref
def test_stdin_without_shebang(ok_sh: Path) -> None:
    rc, lines = _ref_case("err_stdin_no_shebang")
    with pytest.raises(OptionError) as info:
        parse_sbatch([], {}, b"echo hi\n")
    assert (info.value.lines, info.value.exit_code) == (lines, rc)


@needs_ref
@pytest.mark.parametrize("argv", [["--time=-5", "ok.sh"], ["-N", "99", "ok.sh"],
                                  ["--cpus-per-task=99", "ok.sh"], ["--qos=nosuch", "ok.sh"],
                                  ["--dependency=afterok:999999", "ok.sh"],
                                  ["--parsable", "ok.sh"], ["--test-only", "-n2", "ok.sh"]])
def test_reference_accepted(ok_sh: Path, argv: list[str]) -> None:
    parse_sbatch(argv, {})


@needs_ref
def test_info_texts() -> None:
    assert help_text() == (REF / "help_sbatch.txt").read_text()
    assert usage_text() == (REF / "usage_sbatch.txt").read_text()
    assert version_text() == (REF / "version_sbatch.txt").read_text().replace("slurm-wlm ", "slurm ")  # upstream's form
    for word in ("--help", "-h", "--usage", "--version", "-V"):
        req = parse_sbatch([word, "does-not-exist.sh"], {})
        assert list(req.options.values()) == [True]


# ------------------------------------------------------------------------- typed values
def test_typed_values(ok_sh: Path) -> None:
    req = parse_sbatch(shlex.split(
        "-N 2-4 -n 8 --ntasks-per-node=2 -c 3 --mem=4G -t 1-00:00 -p debug -J x --exclusive "
        "-w n[1-3] -x n4 -H -o o-%j -e e -i /dev/null -D /tmp --parsable -a 1-5%2 "
        "-d afterok:12+5,afterany:13 --export=ALL,A=1 --gres=gpu:a100:2 --gpus=v100:3 "
        "-A acct -q high --nice=5 --begin=now+1hour --test-only --requeue "
        "--signal=B:USR1@90 --open-mode=append --comment=hi --mail-type=END,FAIL "
        "--mail-user=u@x ok.sh a1 a2"), {})
    o = req.options
    assert o["nodes"] == [2, 4] and o["ntasks"] == 8 and o["ntasks-per-node"] == 2
    assert o["cpus-per-task"] == 3 and o["mem"] == 4096 and o["time"] == 1440
    assert o["exclusive"] == "exclusive" and o["hold"] is True
    assert o["nodelist"] == ["n1", "n2", "n3"] and o["exclude"] == ["n4"]
    assert o["array"] == {"indices": [1, 2, 3, 4, 5], "max_running": 2, "spec": "1-5%2"}
    assert o["dependency"]["conditions"] == [
        {"type": "afterok", "job_ids": ["12"], "minutes": 5},
        {"type": "afterany", "job_ids": ["13"], "minutes": None}]
    assert o["export"] == {"mode": "ALL", "names": ["A"], "assignments": {"A": "1"}}
    assert o["gres"] == [{"name": "gpu", "type": "a100", "count": 2}]
    assert o["gpus"] == {"type": "v100", "count": 3}
    assert o["signal"]["number"] == 10 and o["signal"]["batch_shell_only"]
    assert o["open-mode"] == "append" and o["nice"] == 5
    assert isinstance(o["begin"], int)
    assert req.script_args == ["a1", "a2"] and req.script_path == "ok.sh"
    json.dumps(o)


def test_precedence(ok_sh: Path) -> None:
    (ok_sh / "s.sh").write_text("#!/bin/sh\n#SBATCH -t 10 -p a -J s\ntrue\n")
    req = parse_sbatch(["-p", "c", "s.sh"], {"SBATCH_TIMELIMIT": "20", "SBATCH_PARTITION": "b"})
    assert (req.options["time"], req.options["partition"], req.options["job-name"]) == \
        (20, "c", "s")


def test_wrap(ok_sh: Path) -> None:
    req = parse_sbatch(["--wrap", "echo hi"], {})
    assert req.script_text == "#!/bin/sh\n# This script was created by sbatch --wrap.\n\n" \
                              "echo hi\n"
    assert req.script_path is None


def test_mem_exclusive(ok_sh: Path) -> None:
    with pytest.raises(OptionError) as info:
        parse_sbatch(["--mem=1", "--mem-per-cpu=1", "ok.sh"], {})
    assert info.value.exit_code == 1


def test_verbose_block(ok_sh: Path) -> None:
    req = parse_sbatch(["-v", "-t", "90", "--mem=0", "-N", "2-4", "-n", "3", "ok.sh"], {})
    block = format_verbose_block(req)
    assert "sbatch: time                : 01:30:00\n" in block
    assert "sbatch: mem                 : 0?\n" in block
    assert "sbatch: nodes               : 2-3\n" in block
    assert block.startswith("sbatch: defined options\n")
    assert block.endswith("sbatch: end of defined options\n")


# ---------------------------------------------------------------------------------- srun
def test_srun_stops_at_command() -> None:
    req = parse_srun(["-N2", "-n4", "-l", "--mpi=pmi2", "hostname", "-n", "9"], {})
    assert req.command == ["hostname", "-n", "9"]
    assert req.options["nodes"] == [2, 2] and req.options["ntasks"] == 4
    assert req.options["label"] is True and req.options["mpi"] == "pmi2"


def test_srun_het_and_env() -> None:
    req = parse_srun(["--het-group=0", "a", ":", "-n2", "b"], {"SLURM_NTASKS": "3"})
    assert req.commands == [["a"], ["b"]]
    assert req.options["ntasks"] == 3 and req.components[1]["ntasks"] == 2


def test_srun_errors() -> None:
    with pytest.raises(OptionError) as info:
        parse_srun(["--time=abc", "x"], {})
    assert info.value.lines == ["srun: error: Invalid --time specification"]


def test_salloc() -> None:
    from plurm.tools.sbatch_cli import parse_salloc
    req = parse_salloc(["-N2", "--bell", "-K", "bash", "-l"], {"SALLOC_PARTITION": "p"})
    assert req.command == ["bash", "-l"]
    assert req.options["nodes"] == [2, 2] and req.options["partition"] == "p"
    assert req.options["bell"] is True and req.options["kill-command"] is True
    with pytest.raises(OptionError):
        parse_salloc(["-o", "x"], {})   # salloc has no --output


def test_srun_specific_rows() -> None:
    req = parse_srun(["-W", "30", "--cpu_bind=cores", "-K", "x"], {})
    assert req.options["wait"] == 30 and req.options["cpu-bind"] == "cores"
    req = parse_sbatch(["-W", "--wrap", "true"], {})
    assert req.options["wait"] is True


def test_pbs_translation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.sh").write_text("#!/bin/bash\n#SBATCH -J sb -t 5\n#PBS -N pb\n"
                                   "#PBS -l nodes=2:ppn=4,walltime=1:00:00\n#PBS -m ae\ntrue\n")
    req = parse_sbatch(["p.sh"], {})
    assert req.options["job-name"] == "pb" and req.options["time"] == 60
    assert req.options["nodes"] == [2, 2] and req.options["ntasks"] == 8
    assert req.options["mail-type"]["types"] == ["FAIL", "END"]
    assert [p["option"] for p in req.pbs_translated] == [
        "job-name", "nodes", "ntasks", "time", "mail-type"]
    req = parse_sbatch(["--ignore-pbs", "p.sh"], {})
    assert req.options["job-name"] == "sb" and req.pbs_translated == []


def test_directive_lines_and_array_limit(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.sh").write_text("#!/bin/sh\n#SBATCH -HN2\n#SBATCH --time\n#SBATCH 10\n"
                                   "#SBATCH -a 0-5000\ntrue\n")
    with pytest.raises(OptionError) as info:
        parse_sbatch(["s.sh"], {})
    assert info.value.exit_code == 1
    req = parse_sbatch(["s.sh"], {}, max_array_size=10001)
    assert [(d["line"], d["option"], d["given"]) for d in req.directives] == [
        (2, "hold", "-H"), (2, "nodes", "-HN2"), (3, "time", "--time 10"),
        (5, "array", "-a 0-5000")]
    assert len(req.options["array"]["indices"]) == 5001


# ------------------------------------------------------------------ whole-script properties
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from plurm.grammar.script import UnmatchedQuote, read_script, tokenize  # noqa: E402

_LINE = st.text(alphabet="#SBATCHPBS -=\"'\\\t :,abcNnt0123456789%@[]", max_size=30)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=60))
def test_tokenize_total(text: str) -> None:
    try:
        words, comment = tokenize(text)
    except UnmatchedQuote:
        return
    assert all(isinstance(w, str) for w in words)
    assert comment == "" or comment.startswith("#")


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.one_of(_LINE, st.builds(lambda s: "#SBATCH " + s, _LINE),
                                st.builds(lambda s: "#PBS " + s, _LINE)), max_size=8))
def test_scripts_raise_only_option_errors(lines: list[str], tmp_path_factory) -> None:
    body = "#!/bin/sh\n" + "\n".join(lines) + "\n"
    try:
        read_script(body)
    except UnmatchedQuote:
        pass
    path = tmp_path_factory.mktemp("s") / "s.sh"
    path.write_text(body)
    try:
        req = parse_sbatch([str(path)], {})
    except OptionError as exc:
        assert exc.lines and exc.exit_code in (1, 255)
    else:
        json.dumps(req.options)
        format_verbose_block(req)


def test_memory_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.sh").write_text("#!/bin/sh\n#SBATCH --mem=1G\ntrue\n")
    (tmp_path / "n.sh").write_text(OK)
    # the script's memory wins over the environment's; a command-line one beats the env
    assert parse_sbatch(["m.sh"], {"SBATCH_MEM_PER_CPU": "4G"}).options == {"mem": 1024}
    req = parse_sbatch(["--mem-per-cpu=5", "n.sh"], {"SBATCH_MEM_PER_NODE": "2G"})
    assert req.options == {"mem-per-cpu": 5}
    for argv, env in ((["n.sh"], {"SBATCH_MEM_PER_CPU": "4G", "SBATCH_MEM_PER_NODE": "2G"}),
                      (["--mem-per-cpu=3", "m.sh"], {})):
        with pytest.raises(OptionError) as info:
            parse_sbatch(argv, env)
        assert info.value.exit_code == 1 and "mutually exclusive" in info.value.message
