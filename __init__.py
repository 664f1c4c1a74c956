"""plurm: a pluggable, vendor-neutral workload manager that speaks Slurm.

The repository root is the import package ``plurm``; its folders are the
subpackages (corescheduler, nodeagent, plugins, accel, grammar, tools).
Keep this module free of imports: every command pays for them at start-up.
"""

__version__ = "0.1.0"
# What `sbatch --version` and friends print: plurm answers as the Slurm
# release whose behaviour it follows, so tools that parse the version work.
SLURM_COMPAT_VERSION = "22.05.8"
# `--version` on stdout is upstream Slurm's form, "slurm X.Y.Z" (Debian's build says
# "slurm-wlm X.Y.Z", which the parsers below do not accept): law matches
# ^slurm (\d+)\.(\d+)\.(\d+) on the first line, puppet-slurm ^slurm (.*)$, FirecREST strips
# "slurm " from the whole output, so nothing may follow on stdout.  plurm's own name goes to
# stderr, where a person at a terminal sees it and those parsers do not read.
SLURM_VERSION_LINE = f"slurm {SLURM_COMPAT_VERSION}\n"
PLURM_VERSION_LINE = f"plurm {__version__} (a Slurm-compatible workload manager, answering as Slurm {SLURM_COMPAT_VERSION})\n"


def write_version() -> None:
    """What every command's -V / --version prints (see SLURM_VERSION_LINE)."""
    import sys  # at call time: this module stays free of imports

    sys.stdout.write(SLURM_VERSION_LINE)
    sys.stdout.flush()
    sys.stderr.write(PLURM_VERSION_LINE)
