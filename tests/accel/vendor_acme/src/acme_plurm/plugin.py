"""The plugin module named by the ``plurm`` entry point: it only describes the
backend; the functions live in ``acme_plurm.backend`` and run in plurm's probe."""

from plurm.plugins.hookspecs import hookimpl
from plurm.plugins.types import AccelBackend


@hookimpl
def plurm_register_accel_backends():
    return [AccelBackend(
        name="acme", vendor="acme",
        detect="acme_plurm.backend:detect",
        binding_env="acme_plurm.backend:binding_env",
        usage="acme_plurm.backend:usage",
        health_check="acme_plurm.backend:health_check",
        autodetect=("acme",),
        description="ACME tensor accelerators (devices listed in $ACME_DEVICES_FILE)",
    )]
