"""A statement as a PDF (ReportLab: pure Python, no system libraries). Deterministic: the document's
creation date is the statement's issue date and its identifier derives from the number, so the same
statement gives the same bytes on every download."""

from __future__ import annotations

from decimal import Decimal
from io import BytesIO

from reportlab.lib import colors
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import getSampleStyleSheet
from reportlab.lib.units import mm
from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

from metering.chargeback.money import minor_unit
from metering.statements.document import LineIn, StatementDoc

__all__ = ["money", "render_pdf"]


def money(amount: Decimal | None, currency: str) -> str:
    """``1,234.56``; unpriced lines read "unpriced"."""
    if amount is None:
        return "unpriced"
    places = minor_unit(currency) if currency else 2
    return f"{amount:,.{places}f}"


def _line_row(line: LineIn, currency: str) -> list[str]:
    price = "" if line.unit_price is None else f"{line.unit_price.normalize():f}"
    hours = "" if line.kind == "credit" else f"{line.ge_hours.quantize(Decimal('0.01')):,}"
    return [str(line.line_no), line.description, hours, price, money(line.amount, currency)]


def render_pdf(doc: StatementDoc) -> bytes:
    styles = getSampleStyleSheet()
    out = BytesIO()
    pdf = SimpleDocTemplate(
        out,
        pagesize=A4,
        title=f"Statement {doc.number}",
        author="gpuplatform",
        subject=f"GPU chargeback {doc.period_label}",
        leftMargin=18 * mm,
        rightMargin=18 * mm,
        invariant=1,  # no timestamp or random id: the same statement gives the same bytes
    )
    currency = doc.currency or "—"
    story: list = [
        Paragraph(f"Statement {doc.number}", styles["Title"]),
        Paragraph(f"To: {doc.addressee}", styles["Normal"]),
        Paragraph(f"Cost centre: {doc.cost_centre or '—'}", styles["Normal"]),
        Paragraph(
            f"Period: {doc.period_label} ({doc.period_start:%Y-%m-%d} to {doc.period_end:%Y-%m-%d},"
            " end exclusive)",
            styles["Normal"],
        ),
        Paragraph(f"Issued: {doc.issued_at:%Y-%m-%d}   Currency: {currency}", styles["Normal"]),
        Spacer(1, 6 * mm),
    ]
    style = TableStyle(
        [
            ("FONTNAME", (0, 0), (-1, 0), "Helvetica-Bold"),
            ("LINEBELOW", (0, 0), (-1, 0), 0.5, colors.black),
            ("LINEABOVE", (0, -1), (-1, -1), 0.5, colors.black),
            ("FONTNAME", (0, -1), (-1, -1), "Helvetica-Bold"),
            ("ALIGN", (2, 0), (-1, -1), "RIGHT"),
            ("FONTSIZE", (0, 0), (-1, -1), 8),
        ]
    )
    for title, lines, subtotal in doc.sections:
        if not lines:
            continue
        story.append(Paragraph(title, styles["Heading3"]))
        rows = [["#", "Description", "GE-hours", "Price/GE-h", f"Amount ({currency})"]]
        rows += [_line_row(line, doc.currency) for line in lines]
        rows.append(["", f"{title} total", "", "", money(subtotal, doc.currency)])
        story.append(Table(rows, colWidths=[10 * mm, 92 * mm, 24 * mm, 22 * mm, 26 * mm], style=style))
        story.append(Spacer(1, 4 * mm))
    totals = [
        ["Charges", money(doc.charges_total, doc.currency)],
        ["Adjustments", money(doc.adjustments_total, doc.currency)],
        ["Credits and manual charges", money(doc.credits_total, doc.currency)],
        [f"Total due ({currency})", money(doc.total, doc.currency)],
    ]
    story.append(
        Table(
            totals,
            colWidths=[60 * mm, 30 * mm],
            hAlign="RIGHT",
            style=TableStyle(
                [
                    ("ALIGN", (1, 0), (1, -1), "RIGHT"),
                    ("FONTNAME", (0, -1), (-1, -1), "Helvetica-Bold"),
                    ("LINEABOVE", (0, -1), (-1, -1), 0.5, colors.black),
                ]
            ),
        )
    )
    if doc.unpriced_ge_hours:
        story.append(Spacer(1, 4 * mm))
        story.append(
            Paragraph(
                f"{doc.unpriced_ge_hours.quantize(Decimal('0.01')):,} GE-hours had no rate card: listed, "
                "not charged.",
                styles["Italic"],
            )
        )
    pdf.build(story)
    return out.getvalue()
