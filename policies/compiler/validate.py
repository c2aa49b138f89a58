"""A sharing policy checked against its pool: every problem found, each with a stable code.

Nothing here raises on bad input: the service turns the list into one problem+json answer, so the
platform team sees every mistake of a form at once rather than one per submit.
"""

from __future__ import annotations

import math
from typing import Any

from inventory.domain.gpu_models import GpuModel, resolve_gpu_model
from policies.compiler.geometry import fit_geometry
from policies.compiler.naming import resource_name_problem
from policies.compiler.spec import CorePolicy, MigStrategy, PolicyProblem, PoolSpec, SharingMode, SharingSpec

__all__ = ["MAX_REPLICAS", "MAX_SPLIT_COUNT", "normalise_parameters", "validate_policy"]

# Beyond these a pool advertises so many units that a scheduler's view stops meaning anything; the
# device plugin itself sets no upper bound (realworld has a 16384-replica config used for accounting).
MAX_REPLICAS = 64
MAX_SPLIT_COUNT = 64


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def normalise_parameters(mode: SharingMode, parameters: dict[str, Any]) -> dict[str, Any]:
    """The parameters a mode keeps, with defaults filled, so equal policies store (and hash) equally.
    Values that cannot be read are kept as given for ``validate_policy`` to report."""
    p = dict(parameters or {})
    if mode == SharingMode.TIME_SLICING:
        replicas = _int(p.get("replicas"))
        return {
            "replicas": replicas if replicas is not None else p.get("replicas"),
            "fail_requests_greater_than_one": bool(p.get("fail_requests_greater_than_one", False)),
        }
    if mode == SharingMode.MPS:
        replicas = _int(p.get("replicas"))
        limit = p.get("memory_limit_mib")
        limit_int = _int(limit) if limit not in (None, "") else None
        return {
            "replicas": replicas if replicas is not None else p.get("replicas"),
            "memory_limit_mib": limit_int
            if limit_int is not None
            else (None if limit in (None, "") else limit),
        }
    if mode == SharingMode.HAMI:
        split = _int(p.get("split_count", 10))
        scaling = _number(p.get("memory_scaling", 1))
        return {
            "split_count": split if split is not None else p.get("split_count"),
            "memory_scaling": scaling if scaling is not None else p.get("memory_scaling"),
            "core_policy": str(p.get("core_policy") or CorePolicy.DEFAULT),
        }
    if mode == SharingMode.MIG:
        geometry = p.get("geometry") or {}
        clean: dict[str, Any] = {}
        if isinstance(geometry, dict):
            for model_key in sorted(geometry):
                per_card = geometry[model_key]
                if isinstance(per_card, dict):
                    clean[str(model_key)] = {
                        str(name): (_int(count) if _int(count) is not None else count)
                        for name, count in sorted(per_card.items())
                        if _int(count) != 0
                    }
                else:
                    clean[str(model_key)] = per_card
        return {"strategy": str(p.get("strategy") or MigStrategy.MIXED), "geometry": clean}
    return {}


def validate_policy(*, spec: SharingSpec, pool: PoolSpec) -> list[PolicyProblem]:
    problems: list[PolicyProblem] = []
    if spec.resource_name and (why := resource_name_problem(spec.resource_name)):
        problems.append(PolicyProblem("policy.resource_name_invalid", why, "resource_name"))
    if pool.driver_managed_mig and spec.mode != SharingMode.DRA:
        return [*problems, _driver_managed_mig(spec.mode, pool)]
    p = spec.parameters
    if spec.mode in (SharingMode.TIME_SLICING, SharingMode.MPS):
        problems += _replicas(p.get("replicas"))
        if spec.mode == SharingMode.MPS and not problems:
            problems += _mps_memory(p.get("memory_limit_mib"), int(p["replicas"]), pool)
    elif spec.mode == SharingMode.HAMI:
        problems += _hami(p)
    elif spec.mode == SharingMode.MIG:
        problems += _mig(p, pool)
    return problems


def _driver_managed_mig(mode: SharingMode, pool: PoolSpec) -> PolicyProblem:
    names = pool.driver_managed_mig_nodes
    where = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    why = (
        f"the NVIDIA DRA driver manages MIG on this pool's nodes ({where}): with its DynamicMIG gate it "
        "creates and deletes MIG partitions per claim, and mig-parted must not run beside it"
    )
    if mode == SharingMode.MIG:
        return PolicyProblem(
            "policy.driver_managed_mig",
            f"A MIG geometry cannot be set here: {why}. Declare mode dra; claims choose their profiles.",
            "parameters.geometry",
        )
    # Every other mode runs the device plugin and sets nvidia.com/mig.config (all-disabled) for
    # mig-manager, which would tear down the partitions the driver made.
    return PolicyProblem(
        "policy.driver_managed_mig",
        f"Mode {mode} cannot be declared here: {why}, and this mode sets GPU Operator's MIG label "
        "(nvidia.com/mig.config) and the device plugin. Declare mode dra.",
        "mode",
    )


def _replicas(value: Any) -> list[PolicyProblem]:
    replicas = _int(value)
    if replicas is None:
        return [
            PolicyProblem("policy.replicas_invalid", "replicas must be a whole number", "parameters.replicas")
        ]
    if replicas < 2:
        # The device plugin refuses it too: "number of replicas must be >= 2" (api/config/v1/replicas.go).
        return [
            PolicyProblem(
                "policy.replicas_too_low",
                f"replicas must be at least 2 (got {replicas}); one replica is the exclusive mode",
                "parameters.replicas",
            )
        ]
    if replicas > MAX_REPLICAS:
        return [
            PolicyProblem(
                "policy.replicas_too_high",
                f"replicas must be at most {MAX_REPLICAS} (got {replicas})",
                "parameters.replicas",
            )
        ]
    return []


def _models(pool: PoolSpec) -> list[GpuModel]:
    return [resolve_gpu_model(product=m.model_key) for m in pool.models]


def _mps_memory(value: Any, replicas: int, pool: PoolSpec) -> list[PolicyProblem]:
    if value in (None, ""):
        return []
    limit = _int(value)
    if limit is None or limit <= 0:
        return [
            PolicyProblem(
                "policy.mps_memory_limit_invalid",
                "memory_limit_mib must be a whole number of MiB above 0",
                "parameters.memory_limit_mib",
            )
        ]
    for model in _models(pool):
        room = model.memory_mib // replicas if model.memory_mib else 0
        if room and limit > room:
            return [
                PolicyProblem(
                    "policy.mps_memory_limit_too_high",
                    f"{limit} MiB per replica x {replicas} replicas is more than a {model.key} holds "
                    f"({model.memory_mib} MiB; at most {room} MiB each)",
                    "parameters.memory_limit_mib",
                )
            ]
    return []


def _hami(p: dict[str, Any]) -> list[PolicyProblem]:
    problems = []
    split = _int(p.get("split_count"))
    if split is None or not 1 <= split <= MAX_SPLIT_COUNT:
        problems.append(
            PolicyProblem(
                "policy.split_count_invalid",
                f"split_count must be a whole number from 1 to {MAX_SPLIT_COUNT}",
                "parameters.split_count",
            )
        )
    scaling = _number(p.get("memory_scaling"))
    if scaling is None or not 0 < scaling <= 8:
        problems.append(
            PolicyProblem(
                "policy.memory_scaling_invalid",
                "memory_scaling must be above 0 and at most 8 (1 = the card's memory, more oversubscribes)",
                "parameters.memory_scaling",
            )
        )
    if p.get("core_policy") not in set(CorePolicy):
        problems.append(
            PolicyProblem(
                "policy.core_policy_unknown",
                f"core_policy must be one of {', '.join(CorePolicy)}",
                "parameters.core_policy",
            )
        )
    return problems


def _mig(p: dict[str, Any], pool: PoolSpec) -> list[PolicyProblem]:
    problems: list[PolicyProblem] = []
    strategy = p.get("strategy")
    if strategy not in set(MigStrategy):
        problems.append(
            PolicyProblem(
                "policy.mig_strategy_unknown", "strategy must be mixed or single", "parameters.strategy"
            )
        )
    geometry = p.get("geometry")
    if not isinstance(geometry, dict):
        return [
            *problems,
            PolicyProblem(
                "policy.mig_geometry_invalid",
                "geometry must map GPU models to profiles",
                "parameters.geometry",
            ),
        ]
    if not pool.models:
        problems.append(
            PolicyProblem(
                "policy.pool_models_unknown",
                f"pool {pool.name} has no GPUs in the inventory yet: a MIG geometry cannot be checked",
                "parameters.geometry",
            )
        )
    in_pool = {m.model_key for m in pool.models}
    for key in sorted(set(geometry) - in_pool):
        problems.append(
            PolicyProblem(
                "policy.mig_model_not_in_pool",
                f"{key} is not a GPU model of pool {pool.name} "
                f"(it has {', '.join(sorted(in_pool)) or 'none'})",
                f"parameters.geometry.{key}",
            )
        )
    for model in _models(pool):
        field = f"parameters.geometry.{model.key}"
        if not model.mig_capable:
            problems.append(
                PolicyProblem("policy.mig_not_supported", f"{model.key} does not support MIG", field)
            )
            continue
        per_card = geometry.get(model.key)
        if not per_card:
            problems.append(
                PolicyProblem("policy.mig_geometry_missing", f"no MIG geometry given for {model.key}", field)
            )
            continue
        if not isinstance(per_card, dict) or any(_int(v) is None for v in per_card.values()):
            problems.append(
                PolicyProblem(
                    "policy.mig_geometry_invalid", "a geometry maps profiles to whole numbers", field
                )
            )
            continue
        fit = fit_geometry(model=model, geometry={k: int(v) for k, v in per_card.items()})
        if not fit.fits:
            problems.append(PolicyProblem("policy.mig_geometry_invalid", fit.reason, field))
        elif strategy == MigStrategy.SINGLE and len(per_card) > 1:
            problems.append(
                PolicyProblem(
                    "policy.mig_single_needs_one_profile",
                    f"the single strategy advertises every instance as one resource, so all instances on "
                    f"a {model.key} must be the same profile (got {', '.join(sorted(per_card))})",
                    field,
                )
            )
    return problems
