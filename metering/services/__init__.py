"""Metering's writes: the hourly ledger, rate cards, billing periods and their reports."""
