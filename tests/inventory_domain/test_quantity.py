from decimal import Decimal

import pytest

from gpuplatform.quantity import (
    QuantityError,
    format_binary,
    format_decimal,
    parse_quantity,
    to_mib,
    to_mib_int,
)
from tests.inventory_domain import realworld


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("40Gi", Decimal(40 * 1024**3)),
        ("81920Mi", Decimal(81920 * 1024**2)),
        ("9984Mi", Decimal(9984 * 1024**2)),
        ("1Ki", Decimal(1024)),
        ("1Ti", Decimal(1024**4)),
        ("1Pi", Decimal(1024**5)),
        ("1Ei", Decimal(1024**6)),
        ("500m", Decimal("0.5")),
        ("100m", Decimal("0.1")),
        ("8k", Decimal(8000)),
        ("1M", Decimal(10**6)),
        ("1G", Decimal(10**9)),
        ("1T", Decimal(10**12)),
        ("1P", Decimal(10**15)),
        ("1E", Decimal(10**18)),  # a lone E is exa, not an exponent
        ("1e3", Decimal(1000)),
        ("1E3", Decimal(1000)),
        ("5e-3", Decimal("0.005")),
        ("2u", Decimal("0.000002")),
        ("100n", Decimal("0.0000001")),
        (".5", Decimal("0.5")),
        ("5.", Decimal(5)),
        ("+1.5Gi", Decimal("1.5") * 1024**3),
        ("-1Mi", Decimal(-(1024**2))),
        ("0", Decimal(0)),
        ("16384", Decimal(16384)),
    ],
)
def test_it_parses_every_suffix_family(text, expected):
    assert parse_quantity(text) == expected


def test_it_accepts_numbers_yaml_already_decoded():
    assert parse_quantity(7) == 7
    assert parse_quantity(Decimal("1.5")) == Decimal("1.5")


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        " ",
        "Gi",
        "1 Gi",
        "1gi",
        "1KiB",
        "1ki",
        "abc",
        "1e",
        "--1",
        "1.2.3",
        "1Gi ",
        "0x10",
        "1e999",
        "NaN",
    ],
)
def test_it_rejects_garbage_with_a_clear_error(garbage):
    with pytest.raises(QuantityError, match="not a quantity"):
        parse_quantity(garbage)


@pytest.mark.parametrize("wrong_type", [True, 1.5, None, [1], {"value": "1"}])
def test_it_rejects_values_that_are_not_quantities(wrong_type):
    with pytest.raises(QuantityError):
        parse_quantity(wrong_type)


def test_quantity_error_is_a_value_error():
    assert issubclass(QuantityError, ValueError)


def test_mib_conversions_are_exact():
    assert to_mib("40Gi") == 40960
    assert to_mib("80Gi") == 81920
    assert to_mib("1G") == Decimal("953.67431640625")
    assert to_mib_int("1G") == 953
    assert to_mib_int("98296Mi") == 98296


@pytest.mark.parametrize(
    ("value", "expected"),
    [(40 * 1024**3, "40Gi"), (1536 * 1024**2, "1536Mi"), (1024, "1Ki"), (1000, "1000"), (0, "0")],
)
def test_format_binary_picks_the_largest_exact_suffix(value, expected):
    assert format_binary(value) == expected
    assert parse_quantity(expected) == value


@pytest.mark.parametrize(
    ("value", "expected"),
    [(Decimal("1.5"), "1500m"), (8000, "8k"), (Decimal("0.000002"), "2u"), (10**9, "1G"), (0, "0")],
)
def test_format_decimal_matches_kubernetes_canonical_form(value, expected):
    assert format_decimal(value) == expected
    assert parse_quantity(expected) == value


def test_every_quantity_in_the_realworld_dra_files_parses():
    # Every capacity/counter "value:" in ResourceSlices, plus the CEL quantity() literals of claims.
    values = []
    for obj in realworld.k8s_objects("resourceslice-nvidia-gpu.yaml", kinds={"ResourceSlice"}):
        for device in obj["spec"]["devices"]:
            body = device.get("basic", device)
            values += [entry["value"] for entry in body.get("capacity", {}).values()]
    assert {"80Gi", "9984Mi", "1", "14", "152", "98296Mi"} <= set(values)
    for value in values:
        parse_quantity(value)
    assert to_mib("80Gi") == 81920
    assert to_mib("98296Mi") == 98296


def test_realworld_node_capacities_and_hami_gpumem_parse():
    for doc in realworld.yaml_docs("node-capacity-samples.yaml"):
        for section in ("capacity", "allocatable"):
            for value in (doc.get("status") or {}).get(section, {}).values():
                parse_quantity(value)
    # describe_text numbers as kubectl prints them, including storage in Ki and a bare byte count
    assert parse_quantity("1950447104Ki") == 1950447104 * 1024
    assert parse_quantity("1797532048071") == 1797532048071
    assert parse_quantity("4000Mi") == 4000 * 1024**2
    # HAMi issue #1054: nvidia.com/gpumem: 8k is a decimal-SI quantity = 8000 (MiB)
    assert parse_quantity("8k") == 8000
