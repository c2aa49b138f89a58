"""Policies' pages, one module per group: sharing.py (pools, revisions, admission rules), rollouts.py."""
