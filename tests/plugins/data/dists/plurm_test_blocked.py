from plurm.plugins.hookspecs import hookimpl
from plurm.plugins.types import AccelBackend


@hookimpl
def plurm_register_accel_backends():
    return [AccelBackend(name="blockedaccel", vendor="blocked",
                         detect="plurm_test_blocked:nothing",
                         binding_env="plurm_test_blocked:nothing")]
