"""HAMi handshake annotation at its edges (mutation survivors, docs/mutation-survivors-hami-node.md): the
whole HamiHandshake, raw value and warning included, for good, unreadable and impossible values."""

import time
from datetime import UTC, datetime

import pytest

from inventory.domain.hami_node import HamiHandshake, HandshakeState, parse_hami_handshake
from inventory.domain.issues import warning
from tests.inventory_domain import realworld


def _node_doc(name):
    return next(d for d in realworld.yaml_docs("hami-node-annotations.yaml") if d.get("name") == name)


@pytest.fixture
def server_zone_utc_plus_8(monkeypatch):
    # A control plane run outside UTC (POSIX TZ string: no tzdata needed).
    monkeypatch.setenv("TZ", "XST-8")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_a_reported_handshake_keeps_its_raw_value_and_reads_as_utc():
    raw = _node_doc("legacy-7field-t4")["annotations"]["hami.io/node-handshake"]
    assert parse_hami_handshake(value=raw) == HamiHandshake(
        HandshakeState.REPORTED, datetime(2024, 11, 10, 11, 5, 48, 756620, tzinfo=UTC), False, raw
    )


def test_go_drops_trailing_zeros_of_the_fraction_so_a_short_one_is_tenths_not_microseconds():
    # Go time.String() writes .5 for half a second (layout .999999999), never .500000000.
    raw = "Reported 2024-01-23 04:30:04.5 +0000 UTC m=+1.0"
    assert parse_hami_handshake(value=raw).at == datetime(2024, 1, 23, 4, 30, 4, 500000, tzinfo=UTC)


def test_a_handshake_time_is_utc_whatever_the_servers_zone(server_zone_utc_plus_8):
    handshake = parse_hami_handshake(value="Reported 2024-01-23 12:30:04.25 +0800 CST m=+1.0")
    assert handshake.at.isoformat() == "2024-01-23T04:30:04.250000+00:00"


@pytest.mark.parametrize("raw", ["", "nonsense"])
def test_an_unreadable_handshake_is_unknown_with_a_warning_quoting_it(raw):
    assert parse_hami_handshake(value=raw) == HamiHandshake(
        HandshakeState.UNKNOWN,
        None,
        False,
        raw,
        (warning("hami.handshake.unparsed", f"unrecognised handshake {raw!r}", source="handshake"),),
    )


def test_an_absent_handshake_is_unknown_with_an_empty_raw_value():
    assert parse_hami_handshake(value=None) == HamiHandshake(
        HandshakeState.UNKNOWN,
        None,
        False,
        "",
        (warning("hami.handshake.unparsed", "unrecognised handshake ''", source="handshake"),),
    )


def test_an_impossible_time_keeps_the_state_and_warns_quoting_the_value():
    raw = "Reported 2024-13-45 99:99:99"
    assert parse_hami_handshake(value=raw) == HamiHandshake(
        HandshakeState.REPORTED,
        None,
        False,
        raw,
        (
            warning(
                "hami.handshake.bad_time",
                "impossible time in 'Reported 2024-13-45 99:99:99'",
                source="handshake",
            ),
        ),
    )
