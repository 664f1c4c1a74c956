"""Build plurm: one import package ``plurm`` from the repository's folders.

The repository root is the package ``plurm`` and each design-card folder
(corescheduler/, nodeagent/, plugins/, accel/, grammar/, tools/) one of its
subpackages.  The scheduling kernels are plain Python typed by a ``.pxd``
(Cython's pure-Python mode): where a C compiler exists they are compiled,
otherwise the same files run as Python.  A failed compile warns and builds
pure, unless PLURM_REQUIRE_EXTENSIONS=1 (CI) makes it fatal.
"""

from __future__ import annotations

import os
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

SUBPACKAGES = ["corescheduler", "nodeagent", "wire", "common", "plugins", "accel", "grammar", "tools", "rest", "api"]

# Each kernel is compiled from a ``*_c.py`` link to its pure-Python twin
# ``*_py.py`` (aiohttp's reader_c/reader_py arrangement), typed by ``*_c.pxd``.
KERNELS = [
    "corescheduler/_placement_c.py",
    "corescheduler/_profile_c.py",
    "corescheduler/_multifactor_c.py",
]

# The user commands are thin scripts in bin/ (see bin/squeue: pip's console-script
# template imports `re` on every start); the daemons and `plurm` are entry points.
USER_COMMANDS = ["sbatch", "srun", "salloc", "squeue", "scancel", "sinfo", "scontrol", "sacct", "sprio", "sshare",
                 "sacctmgr", "sstat", "sattach", "sdiag"]
COMMANDS = [
    "plurm=plurm.tools.plurm:main",
    "plurmctld=plurm.corescheduler.plurmctld:main",
    "plurmd=plurm.nodeagent.plurmd:main",
    "plurmrestd=plurm.rest.plurmrestd:main",  # slurmrestd-compatible REST (docs/rest.md)
]


def _packages() -> tuple[list[str], dict[str, str]]:
    packages = ["plurm"]
    package_dir = {"plurm": "."}
    for sub in SUBPACKAGES:
        for root, dirs, files in os.walk(sub):
            dirs[:] = [d for d in dirs if not d.startswith((".", "__"))]
            if "__init__.py" in files:
                packages.append("plurm." + root.replace(os.sep, "."))
    return packages, package_dir


def _require_extensions() -> bool:
    return os.environ.get("PLURM_REQUIRE_EXTENSIONS", "") not in ("", "0")


def _extensions() -> list:
    if os.environ.get("PLURM_NO_EXTENSIONS", "") not in ("", "0"):
        return []
    try:
        from Cython.Build import cythonize
        from setuptools import Extension
    except ImportError:
        if _require_extensions():
            raise
        print("WARNING: Cython not available; building pure-Python plurm", file=sys.stderr)
        return []
    extensions = [
        Extension("plurm." + path[:-3].replace("/", "."), [path]) for path in KERNELS
    ]
    # The repository root is the package ``plurm``: Cython looks for a kernel's
    # .pxd as plurm/corescheduler/<name>.pxd, so give it a ``plurm`` to look in.
    include = os.path.join("build", "cython-include")
    os.makedirs(include, exist_ok=True)
    link = os.path.join(include, "plurm")
    if not os.path.lexists(link):
        os.symlink(os.path.abspath(os.path.dirname(__file__) or "."), link)
    return cythonize(extensions, language_level=3, quiet=True, include_path=[include],
                     compiler_directives={"annotation_typing": False})


class OptionalBuildExt(build_ext):
    """Compile the kernels when possible; fall back loudly to pure Python."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # no compiler, missing headers, ...
            if _require_extensions():
                raise
            print(f"WARNING: kernels not compiled ({exc}); pure Python in use", file=sys.stderr)

    def build_extension(self, ext) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:
            if _require_extensions():
                raise
            print(f"WARNING: {ext.name} not compiled ({exc}); pure Python in use", file=sys.stderr)


packages, package_dir = _packages()

setup(
    name="plurm",
    version="0.1.0",
    description="A pluggable, vendor-neutral workload manager that speaks Slurm",
    license="Apache-2.0",
    python_requires=">=3.10",
    packages=packages,
    package_dir=package_dir,
    package_data={"plurm.grammar": ["*.lark"], "plurm.corescheduler": ["*.pxd"], "plurm.tools": ["texts/*.txt"],
                  "plurm.rest": ["openapi/*.json"]},
    ext_modules=_extensions(),
    cmdclass={"build_ext": OptionalBuildExt},
    install_requires=[
        "pyzmq>=25",
        "msgspec>=0.18",
        "lark>=1.1",
        "pluggy>=1.3",
        "psutil>=5.9",
        "python-daemon>=3",  # plurmctld/plurmd without -D (plurm.common.daemon)
        "PyYAML>=5.1",  # --yaml on squeue, sinfo, sacct, sshare, scontrol (imported only then)
        "aiohttp>=3.9",  # plurmrestd's HTTP server (docs/rest.md says why this one)
        "PyJWT>=2.8",  # scontrol token and AuthAltTypes=auth/jwt (HS256)
        "rich>=13",  # plurm top's live terminal view (imported only by it)
    ],
    extras_require={
        "test": [
            "pytest>=8",
            "pytest-xdist>=3",
            "pytest-timeout>=2",
            "hypothesis>=6",
            "import-linter>=2.1",  # the import contract (pyproject.toml), run by tests/architecture
            # The vendor libraries' Python packages run for real against fake
            # libnvidia-ml/libamd_smi built by the tests; OpenCL runs on PoCL's CPU device.
            "nvidia-ml-py",
            "amdsmi",
            "pyopencl",
            "pocl-binary-distribution",
            "numpy",
            "matplotlib",  # plurm simulate's plots (tests/tools/simulate)
            "psycopg[binary]>=3.1",  # the PostgreSQL store and the standby (tests/failover)
            # Client libraries run unmodified against a local cluster (tests/integration/
            # test_client_libraries.py); pinned: what they parse of our commands' output matters.
            "submitit==1.5.4",
            "dask-jobqueue==0.9.0",
            "dask[distributed]==2026.8.0",
            # --json/--yaml checked against slurmrestd's OpenAPI schemas (tests/tools/test_json_output.py);
            # the registry API that resolves the specs' $refs came with these versions
            "jsonschema>=4.18",
            "openapi-schema-validator>=0.6",
            "openapi-spec-validator>=0.7",  # plurmrestd's /openapi.json is a valid document (tests/rest)
            "schemathesis>=4",  # requests generated from plurmrestd's document (tests/rest, -m slow)
            "prometheus-client>=0.20",  # /metrics parsed by the reference OpenMetrics parser (tests/rest)
            "openapi-python-client>=0.29",  # a client generated from /openapi.json (tests/rest, contract)
        ],
        # The client libraries, for users who drive plurm with them (also in "test").
        "clients": ["submitit==1.5.4", "dask-jobqueue==0.9.0", "dask[distributed]==2026.8.0"],
        "sim": ["matplotlib>=3.5"],
        # StateSaveLocation=postgresql://...: a store two controllers share (imported only then)
        "postgresql": ["psycopg[binary]>=3.1"],  # plurm simulate's PNG plots; runs without it under --no-plots
        "nvidia": ["nvidia-ml-py"],
        "amd": ["amdsmi"],
        "opencl": ["pyopencl", "pocl-binary-distribution"],
    },
    entry_points={"console_scripts": COMMANDS},
    scripts=[f"bin/{name}" for name in USER_COMMANDS],
    zip_safe=False,
)
