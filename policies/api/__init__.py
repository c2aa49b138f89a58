"""REST adapters of the policies app (docs/policies.md)."""
