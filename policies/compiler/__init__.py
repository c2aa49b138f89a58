"""The policy compiler: sharing policies and admission rules -> native configs and manifests.

Pure (no Django): takes the dataclasses of ``spec``, returns dicts and strings. Checked by
import-linter's pure-module contract.
"""

from policies.compiler.render import config_name, dump_yaml, mig_management_parts, render_bundle
from policies.compiler.spec import (
    CorePolicy,
    MigStrategy,
    ModelCards,
    PolicyProblem,
    PoolSpec,
    SharingMode,
    SharingSpec,
)
from policies.compiler.tradeoffs import DIMENSIONS, pool_yield, tradeoff
from policies.compiler.validate import normalise_parameters, validate_policy

__all__ = [
    "DIMENSIONS",
    "CorePolicy",
    "MigStrategy",
    "ModelCards",
    "PolicyProblem",
    "PoolSpec",
    "SharingMode",
    "SharingSpec",
    "config_name",
    "dump_yaml",
    "mig_management_parts",
    "normalise_parameters",
    "pool_yield",
    "render_bundle",
    "tradeoff",
    "validate_policy",
]
