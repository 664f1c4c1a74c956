from plurm.plugins.hookspecs import hookimpl
from plurm.plugins.types import AccelBackend


@hookimpl
def plurm_register_accel_backends():
    # Same name as plurm's built-in NVML backend.
    return [AccelBackend(name="nvml", vendor="nvidia", detect="plurm_test_dup:detect",
                         binding_env="plurm_test_dup:detect")]
