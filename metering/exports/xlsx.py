"""The XLSX workbook of a period: a Summary sheet (reconciliation, roll-ups) and a Lines sheet with
typed cells and number formats, written in openpyxl's write-only mode (rows go to disk as they
come). Byte-identical on re-run: the document's dates are the report's build time and the zip
entries are re-stamped with a fixed date. No Django."""

from __future__ import annotations

import re
import shutil
import tempfile
import zipfile
from collections.abc import Iterable
from datetime import datetime
from decimal import Decimal
from typing import IO, Any

from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.styles import Font
from openpyxl.worksheet._write_only import WriteOnlyWorksheet

from metering.chargeback.money import minor_unit
from metering.exports.formats import CSV_COLUMNS
from metering.exports.rows import ExportLine, efficiency, sheet_text

__all__ = ["write_xlsx"]

QTY_FORMAT = "#,##0.000000000"
PRICE_FORMAT = "#,##0.000000"
PERCENT_FORMAT = "0.00%"
FIXED_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def _money_format(currency: str) -> str:
    places = minor_unit(currency) if currency else 2
    return "#,##0" + ("." + "0" * places if places else "")


def _cell(sheet: WriteOnlyWorksheet, value: Any, number_format: str | None = None, bold: bool = False) -> Any:
    cell = WriteOnlyCell(sheet, value=value)
    if number_format and value is not None:
        cell.number_format = number_format
    if bold:
        cell.font = Font(bold=True)
    return cell


def _text(sheet: WriteOnlyWorksheet, value: str | None) -> Any:
    """A text cell: neutralised as in the CSV (rows.sheet_text) and typed as a string, so openpyxl
    never writes it as a formula, whatever it starts with."""
    if not value:
        return None
    cell = WriteOnlyCell(sheet, value=sheet_text(value))
    cell.data_type = "s"
    return cell


def _summary(sheet: WriteOnlyWorksheet, meta: dict[str, str], summary: dict[str, Any]) -> None:
    for key, value in meta.items():
        sheet.append([_cell(sheet, key, bold=True), _text(sheet, value)])
    sheet.append([])
    sheet.append([_cell(sheet, "Reconciliation per pool: charged + idle = cards x hours x price", bold=True)])
    heads = ["pool", "currency", "card_hours", "charged_card_hours", "idle_card_hours", "physical_exact",
             "physical", "lines_total", "residue", "holds"]  # fmt: skip
    sheet.append([_cell(sheet, h, bold=True) for h in heads])
    for r in summary.get("reconciliation", []):
        money = _money_format(r["currency"])
        sheet.append(
            [
                _text(sheet, r["pool"]),
                _text(sheet, r["currency"]),
                _cell(sheet, Decimal(r["card_hours"]), QTY_FORMAT),
                _cell(sheet, Decimal(r["charged_card_hours"]), QTY_FORMAT),
                _cell(sheet, Decimal(r["idle_card_hours"]), QTY_FORMAT),
                _cell(sheet, Decimal(r["physical_exact"]), "#,##0.000000000000"),
                _cell(sheet, Decimal(r["physical"]), money),
                _cell(sheet, Decimal(r["lines_total"]), money),
                _cell(sheet, Decimal(r["residue"]), money),
                bool(r["holds"]),
            ]
        )
    for u in summary.get("unpriced", []):
        sheet.append(
            [
                _text(sheet, u["pool"]),
                _text(sheet, "unpriced"),
                _cell(sheet, Decimal(u["card_hours"]), QTY_FORMAT),
                _cell(sheet, Decimal(u["charged_card_hours"]), QTY_FORMAT),
                _cell(sheet, Decimal(u["idle_card_hours"]), QTY_FORMAT),
            ]
        )
    sheet.append([])
    sheet.append([_cell(sheet, "Tenants, rolled up the tree", bold=True)])
    sheet.append([_cell(sheet, h, bold=True) for h in ("tenant", "tenant_path", "currency", "ge_hours",
                                                       "card_hours", "amount")])  # fmt: skip
    for r in summary.get("rollups", []):
        sheet.append(
            [
                _text(sheet, r["tenant"]),
                _text(sheet, r["tenant_path"]),
                _text(sheet, r["currency"] or "unpriced"),
                _cell(sheet, Decimal(r["ge_hours"]), QTY_FORMAT),
                _cell(sheet, Decimal(r["card_hours"]), QTY_FORMAT),
                None
                if r["amount"] is None
                else _cell(sheet, Decimal(r["amount"]), _money_format(r["currency"])),
            ]
        )
    _totals(sheet, summary)
    sheet.append([])
    sheet.append(
        [_cell(sheet, "Card-hours no rate card priced", bold=True),
         _cell(sheet, Decimal(summary.get("unpriced_card_hours", "0")), QTY_FORMAT)]
    )  # fmt: skip


def _totals(sheet: WriteOnlyWorksheet, summary: dict[str, Any]) -> None:
    """Cost-centre totals and the grand total (per currency): sums of the rounded lines."""
    if "cost_centres" not in summary:
        return
    sheet.append([])
    sheet.append([_cell(sheet, "Totals per cost centre (sums of the rounded lines)", bold=True)])
    sheet.append([_cell(sheet, h, bold=True) for h in ("cost_centre", "currency", "amount")])
    for r in summary["cost_centres"]:
        money = _money_format(r["currency"])
        sheet.append([_text(sheet, r["cost_centre"]), _text(sheet, r["currency"]),
                      _cell(sheet, Decimal(r["amount"]), money)])  # fmt: skip
    for r in summary.get("grand_totals", []):
        money = _money_format(r["currency"])
        sheet.append([_cell(sheet, "Grand total", bold=True), _text(sheet, r["currency"]),
                      _cell(sheet, Decimal(r["amount"]), money, bold=True)])  # fmt: skip


def _line_row(sheet: WriteOnlyWorksheet, line: ExportLine) -> list[Any]:
    money = _money_format(line.currency)
    return [
        _text(sheet, line.period),
        line.line_no,
        _text(sheet, line.kind),
        line.tenant_id or None,
        _text(sheet, line.tenant_slug),
        _text(sheet, line.tenant_path),
        _text(sheet, line.cost_centre),
        _text(sheet, line.pool),
        _text(sheet, line.flavor),
        _text(sheet, line.gpu_model),
        _text(sheet, line.basis),
        _text(sheet, line.currency),
        _cell(sheet, line.unit_price, PRICE_FORMAT),
        _cell(sheet, line.ge_hours, QTY_FORMAT),
        _cell(sheet, line.used_ge_hours, QTY_FORMAT),
        _cell(sheet, efficiency(line), PERCENT_FORMAT),
        _cell(sheet, line.card_hours, QTY_FORMAT),
        _cell(sheet, line.amount_exact, "#,##0.000000000000"),
        _cell(sheet, line.amount, money),
        _text(sheet, line.adjusts),
        _text(sheet, line.rate_card),
    ]


def write_xlsx(
    out: IO[bytes],
    *,
    lines: Iterable[ExportLine],
    meta: dict[str, str],
    summary: dict[str, Any],
    built_at: datetime,
) -> None:
    """Write the workbook to ``out`` (a binary file). ``built_at`` stamps the document properties."""
    book = Workbook(write_only=True)
    book.properties.creator = "gpuplatform"
    stamp = built_at.replace(tzinfo=None, microsecond=0)
    book.properties.created = stamp
    book.properties.modified = stamp
    summary_sheet = book.create_sheet("Summary")
    _summary(summary_sheet, meta, summary)
    sheet = book.create_sheet("Lines")
    sheet.freeze_panes = "A2"
    sheet.append([_cell(sheet, column, bold=True) for column in CSV_COLUMNS])
    for line in lines:
        sheet.append(_line_row(sheet, line))
    with tempfile.TemporaryFile() as raw:
        book.save(raw)
        raw.seek(0)
        _restamp(raw, out, modified=stamp.strftime("%Y-%m-%dT%H:%M:%SZ"))


_MODIFIED = re.compile(rb"(<dcterms:modified[^>]*>)[^<]*(</dcterms:modified>)")


def _restamp(source: IO[bytes], out: IO[bytes], *, modified: str) -> None:
    """Copy the zip entry by entry with a fixed date, so equal content gives equal bytes. openpyxl
    sets the document's modified time to the clock when it saves: put the build time back."""
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
        for item in zin.infolist():
            info = zipfile.ZipInfo(item.filename, date_time=FIXED_ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = item.external_attr
            with zin.open(item) as src, zout.open(info, "w") as dst:
                if item.filename == "docProps/core.xml":  # small: read whole
                    dst.write(_MODIFIED.sub(rb"\g<1>" + modified.encode() + rb"\g<2>", src.read()))
                else:
                    shutil.copyfileobj(src, dst, 1 << 16)
