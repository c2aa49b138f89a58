"""Admission control kubesim runs on API writes: ValidatingAdmissionPolicies (`policies`)."""

from kubesim.admission.matching import AdmissionRequest
from kubesim.admission.policies import ValidatingPolicies

__all__ = ["AdmissionRequest", "ValidatingPolicies"]
