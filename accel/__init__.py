"""plurm.accel: accelerators of every vendor, through backends loaded as plugins.

- ``model``: the vendor-neutral ``Device`` record and ``gres_type()``.
- ``detect``: ``detect()``, ``sample_usage()``, ``health_check()`` (each backend in a
  probe subprocess with a timeout) and ``check_against_conf()``.
- ``binding``: the job environment for a set of devices (``binding_env()``).
- ``backends``: the built-in backends (nvml, amdsmi, opencl, static), registered
  through the plugin hooks like any vendor package.

Importing this package imports nothing: the daemons import what they use.
"""
