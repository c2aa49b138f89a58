"""A stand-in for Kueue v0.19 (kubesim/crds/kueue-v0.19.2): faithful on the protocol, not on scheduling."""

from kubesim.controllers.kueue.controller import Kueue

__all__ = ["Kueue"]
