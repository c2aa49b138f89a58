from policies.models.admission import AdmissionApply, AdmissionRule, ApplyState
from policies.models.agents import AgentBootstrapToken, NodeAgent
from policies.models.revisions import PolicyRevision
from policies.models.rollouts import NodePolicyState, OperationKind, Rollout, RolloutState
from policies.models.sharing import SharingMode, SharingPolicy

__all__ = [
    "AdmissionApply",
    "AdmissionRule",
    "AgentBootstrapToken",
    "ApplyState",
    "NodeAgent",
    "NodePolicyState",
    "OperationKind",
    "PolicyRevision",
    "Rollout",
    "RolloutState",
    "SharingMode",
    "SharingPolicy",
]
