"""The exports' CSV writer takes a fast path for rows that need no quoting: it must give exactly the
bytes csv.writer gives (RFC 4180, minimal quoting, CRLF), whatever the fields hold."""

from __future__ import annotations

import csv
import io

from hypothesis import given
from hypothesis import strategies as st

from metering.exports.formats import table_chunks

field = st.text(alphabet=st.sampled_from(list('ab ,"\r\n\té0.-')), max_size=6)


def reference(header: list[str], rows: list[list[str]]) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue().encode()


@given(width=st.integers(1, 4), data=st.data())
def test_the_fast_path_writes_what_csv_writer_writes(width, data):
    rows = data.draw(st.lists(st.lists(field, min_size=width, max_size=width), max_size=8))
    header = [f"c{i}" for i in range(width)]
    assert b"".join(table_chunks(header, rows, rows_per_chunk=3)) == reference(header, rows)


def test_a_lone_empty_field_is_quoted_as_csv_does():
    assert b"".join(table_chunks(["h"], [[""], ["a"]])) == b'h\r\n""\r\na\r\n'
