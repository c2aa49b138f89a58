from policies.models.revisions import PolicyRevision

__all__ = ["PolicyRevision"]
