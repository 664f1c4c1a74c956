"""What the controller does with the options whose plugin or hardware a site may lack
(issue 14, item 8; the commands' side is tools/options_rest.py).

A mixin of ``ClusterCore`` (through core_options.OptionEffects), pure as the rest of the core.
Most of these options are only kept and shown, as Slurm 22.05's slurmctld keeps them without
the plugin (Switches=, BurstBuffer=, Network=, Power=, TresFreq=, Container=, Reboot=1).
What slurmctld refuses, this refuses with its words:

- ``--batch=<features>`` needs a node_features plugin (knl_generic, helpers), which plurm does
  not have: 22.05 refuses every such job (observed on the anchor, even with the same
  features in ``-C``): "Job --batch option is invalid or not a subset of --constraints".
"""

from __future__ import annotations

import logging

from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.identity import Identity
from plurm.wire.model import JobSpec

log = logging.getLogger("plurmctld")

BATCH_REFUSED = ("Job --batch option is invalid or not a subset of --constraints", "BatchConstraint")


class RestOptions:
    def rest_submit(self, spec: JobSpec, who: Identity) -> None:
        """At submission, before the job exists: refuse what slurmctld without the plugins refuses."""
        if spec.batch_features is not None:
            log.info("submission of %s refused: --batch=%s without a node_features plugin",
                     who.user, spec.batch_features)
            raise RequestError(*BATCH_REFUSED)
