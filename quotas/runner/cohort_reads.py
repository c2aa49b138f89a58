"""An admission's cohort lock and the reads made under it, in one round trip (issue 31): a
submission's, and the loop's for each cohort (`readmit`).

Under the cohort lock a decision reads the catalogue's stamp, inventory's capacity stamp and the
cohort's live requests. Each was a reply of its own, and every other decider of the cohort waits for
them. They go with the lock as one message (`gpuplatform.db.together`): PostgreSQL runs them in order
after the lock is granted, each with its own snapshot, so they see what they saw one round trip later.
The live requests are read for the tenants of the catalogue this process has cached; they are used
only when the stamp read beside them says that catalogue is still current (`build_snapshot` reads
them again otherwise, as after any catalogue edit).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.db import connection

from gpuplatform.db.stamped_cache import UNREAD
from gpuplatform.db.together import Statement
from inventory.selectors import CAPACITY_STAMP_SQL, capacity_stamp_of
from quotas.models import Flavor
from quotas.runner.catalogue import CATALOGUE_STAMP_SQL, cached_catalogue, catalogue_stamp_of
from quotas.runner.inputs import LiveRead, live_statement
from quotas.runner.locks import lock_cohorts, lock_cohorts_then_all


@dataclass(frozen=True)
class CohortReads:
    """What `lock_cohort_reading` read under the cohort lock, for `decide_cohort`."""

    catalogue_stamp: int | None = UNREAD
    capacity_stamp: int | None = UNREAD
    live: LiveRead | None = None


def lock_cohort_reading(*, root_id: uuid.UUID, root_path: str, flavors: list[Flavor]) -> CohortReads:
    """The cohort's admission lock, then the two stamps and (when this process has the cohort's
    catalogue cached) its live requests on ``flavors``, in one round trip on PostgreSQL."""
    if connection.vendor != "postgresql":  # no stamps: everything is read afresh
        lock_cohorts(root_ids=[root_id])
        return CohortReads(catalogue_stamp=None, capacity_stamp=None)
    cached = cached_catalogue(root_path=root_path, flavors=flavors)
    flavor_ids = [f.pk for f in flavors]
    reads: list[Statement] = [(CATALOGUE_STAMP_SQL, None), (CAPACITY_STAMP_SQL, None)]
    if cached is not None:
        reads.append(live_statement(tenant_ids=list(cached[1].slug_of), flavor_ids=flavor_ids))
    rows = lock_cohorts_then_all(root_ids=[root_id], reads=reads)
    catalogue_stamp = catalogue_stamp_of(rows[0])
    live = None
    if cached is not None and catalogue_stamp is not None and cached[0] == catalogue_stamp:
        live = LiveRead(catalogue=cached[1], flavor_ids=tuple(flavor_ids), rows=rows[2])
    return CohortReads(catalogue_stamp=catalogue_stamp, capacity_stamp=capacity_stamp_of(rows[1]), live=live)
