"""Exports of a period's report lines: CSV, XLSX, FOCUS 1.2 CSV (and JSON through the API).

``lines`` reads the lines from the database in chunks (constant memory); ``formats`` and ``focus``
turn plain ``ExportLine`` rows into bytes and import no Django; ``xlsx`` writes a workbook in
openpyxl's write-only mode. The same lines give the same bytes, so a re-run is byte-identical.
"""
