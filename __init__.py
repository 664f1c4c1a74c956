"""plurm: a pluggable, vendor-neutral workload manager that speaks Slurm.

The repository root is the import package ``plurm``; its folders are the
subpackages (corescheduler, nodeagent, plugins, accel, grammar, tools).
Keep this module free of imports: every command pays for them at start-up.
"""

__version__ = "0.1.0"
# What `sbatch --version` and friends print: plurm answers as the Slurm
# release whose behaviour it follows, so tools that parse the version work.
SLURM_COMPAT_VERSION = "22.05.8"
