"""The workbook is the same bytes whenever it is written: openpyxl stamps the save time into the
document's properties, which the writer replaces by the report's build time."""

from __future__ import annotations

import datetime as real
import io
import types
import zipfile
from datetime import UTC, datetime

import openpyxl.writer.excel as excel

from metering.exports.xlsx import write_xlsx

BUILT = datetime(2025, 4, 3, 12, 30, tzinfo=UTC)


def saved_at(monkeypatch, when: datetime) -> bytes:
    clock = types.SimpleNamespace(
        datetime=types.SimpleNamespace(now=lambda tz=None: when), timezone=real.timezone
    )
    monkeypatch.setattr(excel, "datetime", clock)
    out = io.BytesIO()
    write_xlsx(out, lines=[], meta={"Period": "2025-03"}, summary={}, built_at=BUILT)
    return out.getvalue()


def test_two_saves_at_different_times_give_the_same_bytes(monkeypatch):
    first = saved_at(monkeypatch, datetime(2026, 1, 1, 9, 0, 0))
    later = saved_at(monkeypatch, datetime(2026, 1, 1, 9, 0, 7))
    assert first == later
    core = zipfile.ZipFile(io.BytesIO(first)).read("docProps/core.xml")
    assert b">2025-04-03T12:30:00Z</dcterms:modified>" in core
    assert all(i.date_time == (1980, 1, 1, 0, 0, 0) for i in zipfile.ZipFile(io.BytesIO(first)).infolist())
