"""A list's pages are read one ahead by a thread: same pages, same order, its failures raised to the
writer, never more than one page beyond the writer's, and a writer that stops stops the reading."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from inventory.kube import KubeError
from inventory.sync.runner import read_ahead


def test_pages_come_in_order_and_all_of_them():
    assert list(read_ahead(iter(range(7)), name="t")) == [0, 1, 2, 3, 4, 5, 6]
    assert list(read_ahead(iter([]), name="t")) == []


def test_a_failure_while_reading_is_raised_to_the_writer_after_the_pages_before_it():
    def pages() -> Iterator[str]:
        yield "page 1"
        yield "page 2"
        raise KubeError("API server answered 500: boom", status=500)

    got: list[str] = []
    with pytest.raises(KubeError) as failure:
        got.extend(read_ahead(pages(), name="t"))  # keeps what came before the failure
    assert got == ["page 1", "page 2"]
    assert failure.value.status == 500


def test_a_writer_that_stops_leaves_at_most_one_page_read_that_it_did_not_take():
    pulled: list[int] = []

    def pages() -> Iterator[int]:
        for n in range(100):
            pulled.append(n)
            yield n

    reader = read_ahead(pages(), name="t")
    assert [next(reader), next(reader), next(reader)] == [0, 1, 2]
    reader.close()
    # the page read ahead of the third, at most
    assert len(pulled) <= 4
