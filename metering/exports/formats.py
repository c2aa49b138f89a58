"""Finance's CSV of a period's lines, and a streamed JSON array of them: generators of bytes that
hold one chunk of rows at a time. No Django."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Iterable, Iterator

from metering.chargeback.money import minor_unit
from metering.exports.rows import ExportLine, efficiency, money_text, number_text, sheet_text, utc_text

__all__ = ["CSV_COLUMNS", "csv_chunks", "csv_record", "json_chunks"]

ROWS_PER_CHUNK = 500
_NEEDS_QUOTES = re.compile(r'["\r\n]')

CSV_COLUMNS = (
    "period",
    "line_no",
    "kind",
    "tenant_id",
    "tenant",
    "tenant_path",
    "cost_centre",
    "pool",
    "flavor",
    "gpu_model",
    "basis",
    "currency",
    "unit_price",
    "ge_hours_allocated",
    "ge_hours_used",
    "efficiency",
    "card_hours_charged",
    "amount_exact",
    "amount",
    "adjusts",
    "rate_card",
)


def csv_record(line: ExportLine, *, text: Callable[[str], str] = sheet_text) -> list[str]:
    """The line's fields as CSV text; ``text`` writes the text columns (neutralised for spreadsheets
    unless the caller is no spreadsheet: the JSON export keeps them as typed)."""
    places = minor_unit(line.currency) if line.currency else 2
    return [
        text(line.period),
        str(line.line_no),
        text(line.kind),
        line.tenant_id,
        text(line.tenant_slug),
        text(line.tenant_path),
        text(line.cost_centre),
        text(line.pool),
        text(line.flavor),
        text(line.gpu_model),
        text(line.basis),
        text(line.currency),
        number_text(line.unit_price),
        number_text(line.ge_hours),
        number_text(line.used_ge_hours),
        number_text(efficiency(line)),
        number_text(line.card_hours),
        number_text(line.amount_exact),
        money_text(line.amount, places),
        text(line.adjusts),
        text(line.rate_card),
    ]


def table_chunks(
    header: Iterable[str], records: Iterable[list[str]], *, rows_per_chunk: int = ROWS_PER_CHUNK
) -> Iterator[bytes]:
    """RFC 4180 CSV (CRLF, minimal quoting, UTF-8), yielded every ``rows_per_chunk`` rows.

    Most rows need no quoting: they are joined as they are (one C call), and only a row whose joined
    text shows a comma too many, a quote or a line break goes through the csv module. Both give the
    same bytes as csv.writer with minimal quoting."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(header)
    out: list[str] = [buffer.getvalue()]
    for count, record in enumerate(records, start=1):
        line = ",".join(record)
        if (
            line.count(",") == len(record) - 1
            and not _NEEDS_QUOTES.search(line)
            and (len(record) > 1 or line)
        ):
            out.append(line + "\r\n")
        else:
            buffer.seek(0)
            buffer.truncate()
            writer.writerow(record)
            out.append(buffer.getvalue())
        if count % rows_per_chunk == 0:
            yield "".join(out).encode()
            out = []
    yield "".join(out).encode()


def csv_chunks(lines: Iterable[ExportLine]) -> Iterator[bytes]:
    return table_chunks(CSV_COLUMNS, (csv_record(line) for line in lines))


def json_record(line: ExportLine) -> dict[str, str | int | None]:
    """Decimals as strings (exact), nulls as null."""
    record = dict(zip(CSV_COLUMNS, csv_record(line, text=str), strict=True))
    out: dict[str, str | int | None] = {k: (v if v != "" else None) for k, v in record.items()}
    out["line_no"] = line.line_no
    out["period_start"] = utc_text(line.period_start)
    out["period_end"] = utc_text(line.period_end)
    return out


def json_chunks(lines: Iterable[ExportLine], *, rows_per_chunk: int = ROWS_PER_CHUNK) -> Iterator[bytes]:
    """A JSON array, one object per line, streamed."""
    parts: list[str] = ["["]
    first = True
    for count, line in enumerate(lines, start=1):
        parts.append(("" if first else ",") + json.dumps(json_record(line), sort_keys=True))
        first = False
        if count % rows_per_chunk == 0:
            yield "".join(parts).encode()
            parts = []
    parts.append("]")
    yield "".join(parts).encode()
