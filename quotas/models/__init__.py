"""Quota models: the capacity catalogue (flavors, quotas, budgets, priority classes, queues) and the
capacity requests decided against it."""

from quotas.models.catalogue import Budget, Flavor, FlavorKind, PriorityClass, Queue, QueueingStrategy, Quota
from quotas.models.kueue_checks import CheckVerdict, WorkloadApproval, WorkloadCheck
from quotas.models.requests import CapacityRequest, FlavorHold, RequestState, RequestTransition

__all__ = [
    "Budget",
    "CapacityRequest",
    "CheckVerdict",
    "Flavor",
    "FlavorHold",
    "FlavorKind",
    "PriorityClass",
    "Queue",
    "QueueingStrategy",
    "Quota",
    "RequestState",
    "RequestTransition",
    "WorkloadApproval",
    "WorkloadCheck",
]
