"""Sharing policies and admission rules, the policy compiler, revisions and rollouts, the agent API."""
