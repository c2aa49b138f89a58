"""Writes of the quotas app: the capacity catalogue (`catalogue`) and capacity requests (`requests`)."""
