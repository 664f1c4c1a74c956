"""Backend functions that misbehave in Python (imported by the probe subprocess)."""

import os
import sys


def raises(options):
    raise RuntimeError("vendor library said no")


def exits(options):
    os._exit(3)


def prints_to_stdout(options):
    # Like amdsmi when it cannot find its library: chatter on stdout.
    print("Unable to find libacme.so")
    sys.stdout.flush()
    os.write(1, b"raw bytes on fd 1\n")
    return []


def counts_calls(options):
    path = options["counter"]
    with open(path, "a") as f:
        f.write("x")
    return []
