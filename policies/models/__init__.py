from policies.models.agents import AgentBootstrapToken, NodeAgent
from policies.models.revisions import PolicyRevision
from policies.models.rollouts import NodePolicyState, OperationKind, Rollout, RolloutState

__all__ = [
    "AgentBootstrapToken",
    "NodeAgent",
    "NodePolicyState",
    "OperationKind",
    "PolicyRevision",
    "Rollout",
    "RolloutState",
]
