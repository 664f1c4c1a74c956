"""srun's MPI plugin type: ``--mpi``, then ``SLURM_MPI_TYPE``, then slurm.conf's ``MpiDefault``.

plurm has three of 22.05's mpi plugins: ``none`` (the tasks get nothing), ``pmi2`` (each
node's plurmstepd serves PMI-1 and PMI-2 on ``PMI_FD``: nodeagent/pmi2.py) and, where the host
has the PMIx library (Debian's libpmix2: nodeagent/pmix_lib.py), ``pmix`` with its versioned
name ``pmix_v4`` (plurmstepd serves PMIx through it: nodeagent/pmix_server.py).  ``cray_shasta``
(and ``pmix`` without the library) srun refuses with the words 22.05's srun prints for a plugin
it cannot find (tests/nodeagent/reference/mpi/mpi_bogus.stderr), before it asks for anything.
``--mpi=list`` names what there is, in 22.05's order, on stdout.
"""

from __future__ import annotations

BASE_TYPES = ("none", "pmi2")
PMIX_TYPES = ("pmix", "pmix_v4")


def types() -> tuple[str, ...]:
    """The MPI types srun accepts on this host (pmix only where libpmix is)."""
    from plurm.nodeagent.pmix_lib import library_path

    return (*BASE_TYPES, *PMIX_TYPES) if library_path() else BASE_TYPES


def list_text() -> str:
    """22.05's ``--mpi=list``: the plugins (pmix first, as 22.05 lists its directory), then the
    versioned pmix names on a line of their own."""
    pmix = "pmix" in types()
    names = (["pmix"] if pmix else []) + list(BASE_TYPES)
    text = "MPI plugin types are...\n" + "".join(f"\t{name}\n" for name in names)
    return text + ("specific pmix plugin versions available: pmix_v4\n" if pmix else "")


def refusal(name: str) -> str:
    """22.05's srun for an MPI type without a plugin (``pmix`` where mpi_pmix.so is absent)."""
    return (f"srun: error: Couldn't find the specified plugin name for mpi/{name} looking at all files\n"
            f"srun: error: cannot find mpi plugin for mpi/{name}\n"
            f"srun: error: MPI: Cannot create context for mpi/{name}\n"
            "srun: error: MPI: Unable to load any plugin\n"
            f"srun: error: Invalid MPI type '{name}', --mpi=list for acceptable types\n")


def mpi_default(conf: str | None) -> str:
    """slurm.conf's MpiDefault (none when it does not say)."""
    if not conf:
        return "none"
    from plurm.wire.client import ClientError, conf_value

    try:
        return conf_value(conf, "MpiDefault") or "none"
    except ClientError:
        return "none"


def answer(value: str | None) -> int | None:
    """``--mpi=list`` (or SLURM_MPI_TYPE=list) and a type srun has no plugin for end srun here,
    before it needs a command or a controller: the exit code; None to go on."""
    import sys

    if value is None:
        return None
    if value == "list":
        sys.stdout.write(list_text())
        return 0
    if value not in types():
        sys.stderr.write(refusal(value))
        return 1
    return None


def chosen(value: str | None, conf: str | None) -> str | None:
    """The step's MPI type: the option (or SLURM_MPI_TYPE), else MpiDefault; None once a
    MpiDefault srun has no plugin for is refused on stderr."""
    import sys

    name = value or mpi_default(conf)
    if name not in types():
        sys.stderr.write(refusal(name))
        return None
    return name
