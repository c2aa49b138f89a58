"""SLO arithmetic (pure): error budgets, burn rates and the multi-window burn-rate alert rules."""
