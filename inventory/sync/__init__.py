"""Inventory sync: per cluster and kind, list then watch, and reconcile into the database (DESIGN §5.1).

``context`` holds what a batch needs from the database, ``handlers`` turn objects into rows,
``ledger`` opens and closes allocation intervals, ``runner`` drives lists, watches and resyncs.
"""
