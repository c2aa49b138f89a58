"""Quotas' pages, one module per group: queues.py (the queue and its requests), catalogue.py."""
