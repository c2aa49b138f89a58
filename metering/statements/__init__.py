"""Statements: what a tenant or cost centre owes for a closed period, as a document (pure) and a PDF."""
