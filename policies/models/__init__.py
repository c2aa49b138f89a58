from policies.models.admission import AdmissionRule
from policies.models.revisions import PolicyRevision
from policies.models.sharing import SharingMode, SharingPolicy

__all__ = ["AdmissionRule", "PolicyRevision", "SharingMode", "SharingPolicy"]
