"""The dashboards metering fills: the tenant's (quota, borrowing, use, waits, budgets), the pool's
utilisation heatmap, and the overview's "what needs attention" items of metering (docs/ui.md)."""
