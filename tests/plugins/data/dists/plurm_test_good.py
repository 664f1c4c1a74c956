from plurm.plugins.hookspecs import hookimpl
from plurm.plugins.types import AccelBackend


def detect(options):
    return []


def binding_env(devices, use_uuid=False):
    return {}


@hookimpl
def plurm_register_accel_backends():
    return [AccelBackend(name="goodaccel", vendor="good", detect=detect,
                         binding_env=binding_env)]
