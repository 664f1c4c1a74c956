"""Which integration tests the pure-Python pass runs again.

CI runs the whole suite on the compiled kernels, then tests/corescheduler and tests/integration
once more with ``PLURM_NO_EXTENSIONS=1``, so that the pure-Python twins of the scheduling
kernels are seen deciding through real daemons too.  The modules below exercise the node agent
(cgroups, binding, MPI wire-up, task I/O), the client tools' own behaviour or the daemons'
start-up and durability: the scheduling decisions they reach are plain ones that every other
test reaches as well, so that second pass leaves them out (marker ``node_side``, deselected
by the pass's ``-m``) instead of spending some 330 s of the CI budget on them twice.  A module
not named here runs in both passes; a single test may carry the marker itself (a minute-long
time limit).
"""

from __future__ import annotations

import pytest

NODE_SIDE = {
    "test_binding", "test_checkpoint", "test_client_libraries", "test_conf_discovery", "test_confinement",
    "test_default_cluster", "test_durability", "test_handwritten_conf", "test_interactive", "test_mpi",
    "test_openmpi", "test_point10_cluster_up", "test_protocol", "test_srun_node",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:  # (every item of the session passes here: only this folder's are marked)
        if item.path.parent.name == "integration" and item.path.stem in NODE_SIDE:
            item.add_marker(pytest.mark.node_side)
