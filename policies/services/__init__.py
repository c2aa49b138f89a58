"""Writes of the policies app: sharing policies, revisions, admission rules."""
