from policies.models.admission import AdmissionApply, AdmissionRule, ApplyState
from policies.models.agents import AgentBootstrapToken, NodeAgent
from policies.models.revisions import PolicyRevision
from policies.models.rollouts import ACTIVE_STATES, NodePolicyState, OperationKind, Rollout, RolloutState
from policies.models.sharing import SharingMode, SharingPolicy

__all__ = [
    "ACTIVE_STATES",
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
