"""New rows' keys made in bulk (inventory/sync/bulk.py, ``random_uuids``) are the UUIDs ``uuid.uuid4``
makes: version 4, RFC 4122's variant, equal and hashed like the same UUID parsed from its text, and
never the same twice; ``insert_values`` gives each row it leaves the key out of one of them."""

from __future__ import annotations

import uuid

import pytest
from django.utils import timezone

from inventory.models import Allocation
from inventory.sync.bulk import RandomUuids, insert_values, random_uuids
from tests.inventory import factories as inv


def test_bulk_uuids_are_version_4_uuids():
    made = random_uuids(5000)

    assert len(set(made)) == 5000
    for value in made:
        assert type(value) is uuid.UUID
        assert value.version == 4
        assert value.variant == uuid.RFC_4122
        parsed = uuid.UUID(str(value))
        assert parsed == value and hash(parsed) == hash(value)
        assert parsed.int == value.int and parsed.bytes == value.bytes


def test_the_fixed_bits_are_set_whatever_the_random_bytes(monkeypatch):
    monkeypatch.setattr("inventory.sync.bulk.os.urandom", lambda n: b"\xff" * n)
    ones = random_uuids(1)[0]
    monkeypatch.setattr("inventory.sync.bulk.os.urandom", lambda n: b"\x00" * n)
    zeros = random_uuids(1)[0]

    # what uuid.UUID(bytes=..., version=4) makes of the same bytes, as uuid.uuid4 does
    assert ones == uuid.UUID(bytes=b"\xff" * 16, version=4)
    assert zeros == uuid.UUID(bytes=b"\x00" * 16, version=4)


def test_a_source_makes_as_many_as_asked_beyond_its_rows():
    source = RandomUuids(3)
    made = [source.next() for _ in range(2500)]

    assert len(set(made)) == 2500


@pytest.mark.django_db
def test_insert_values_gives_each_row_a_new_version_4_key(cast):
    cluster = inv.cluster("east")
    now = timezone.now()
    rows = [
        {
            "cluster_id": cluster.pk,
            "namespace": "team-vision",
            "holder_kind": "Pod",
            "holder_name": f"p{i}",
            "holder_uid": f"uid-{i}",
            "unit_key": "nvidia.com/gpu",
            "resource_name": "nvidia.com/gpu",
            "count": 1,
            "ge": 1,
            "node_name": "n1",
            "started_at": now,
        }
        for i in range(1500)
    ]

    insert_values(Allocation, rows)

    ids = list(Allocation.objects.filter(cluster=cluster).values_list("id", flat=True))
    assert len(ids) == len(set(ids)) == 1500
    assert {value.version for value in ids} == {4}
