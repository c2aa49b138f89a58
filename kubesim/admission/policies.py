"""ValidatingAdmissionPolicy evaluation, as the API server's validating policy plugin dispatches it.

For every policy whose matchConstraints match the request, and every binding naming it whose
matchResources match too: params are resolved (paramKind + the binding's paramRef, by name or
selector, in paramRef.namespace or the request's; none found: parameterNotFoundAction Allow skips the
binding, Deny denies with "failed to configure binding: no params found ..."), then for each param
matchConditions (any false: the policy does not apply), variables (in order, each seeing the earlier
ones, an error failing only the expressions that use it; matchConditions see them too) and
validations run with `object`,
`oldObject`, `request`, `params`, `namespaceObject` and `variables`.

A false validation is the message of its messageExpression, else its message, else "failed
expression: <expr>"; its reason (default Invalid) picks the code (Invalid 422, Forbidden 403,
Unauthorized 401, RequestEntityTooLarge 413). An evaluation error follows the policy's failurePolicy
(Fail: a denial with the error text; Ignore: admitted). The binding's validationActions say what a
denial does: Deny refuses the request (the first denial is answered:
`<resource> "<name>" is forbidden: ValidatingAdmissionPolicy '<p>' with binding '<b>' denied request:
<message>`, with that text also as the one cause), Warn adds a Warning header ("Validation failed for
ValidatingAdmissionPolicy '<p>' with binding '<b>': <message>"), Audit records the
`validation.policy.admission.k8s.io/validation_failure` annotation kubesim keeps in `audit_events`
(with the policy's auditAnnotations). `authorizer` is not provided (an expression using it errors).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from celpy import celtypes

from kubesim import registry
from kubesim.admission.cel import CelError, Programs, lazy_error, to_cel
from kubesim.admission.matching import AdmissionRequest, matches
from kubesim.errors import ApiError
from kubesim.selectors import label_selector_matches

_CODES = {"Invalid": 422, "Forbidden": 403, "Unauthorized": 401, "RequestEntityTooLarge": 413}
VALIDATION_FAILURE_ANNOTATION = "validation.policy.admission.k8s.io/validation_failure"
MAX_AUDIT_EVENTS = 1000

Lister = Callable[[str, str | None], list[dict[str, Any]]]
Getter = Callable[[str, str | None, str], dict[str, Any] | None]


@dataclass(slots=True)
class Decision:
    message: str
    reason: str = "Invalid"
    expression_index: int | None = None


class ConfigError(Exception):
    pass


class ValidatingPolicies:
    def __init__(self, list_objects: Lister, get_object: Getter) -> None:
        self._list = list_objects
        self._get = get_object
        self._programs = Programs()
        self.audit_events: list[dict[str, Any]] = []

    def admit(self, req: AdmissionRequest) -> list[str]:
        """Warnings to send; raises the Status of the first Deny."""
        policies = self._list("validatingadmissionpolicies", None)
        if not policies:
            return []
        bindings = self._list("validatingadmissionpolicybindings", None)
        if not bindings:
            return []
        if req.info.namespaced and req.namespace_labels is None:
            ns = self._get("namespaces", None, req.namespace)
            req.namespace_labels = ((ns or {}).get("metadata") or {}).get("labels") or {}
        warnings: list[str] = []
        denied: tuple[str, str, Decision] | None = None
        for policy in sorted(policies, key=lambda p: p["metadata"]["name"]):
            spec = policy.get("spec") or {}
            if not matches(spec.get("matchConstraints"), req, rules_required=True):
                continue
            name = policy["metadata"]["name"]
            for binding in sorted(bindings, key=lambda b: b["metadata"]["name"]):
                bspec = binding.get("spec") or {}
                if bspec.get("policyName") != name:
                    continue
                if not matches(bspec.get("matchResources"), req, rules_required=False):
                    continue
                decisions = self._decisions(policy, binding, req)
                actions = bspec.get("validationActions") or []
                for decision in decisions:
                    bname = binding["metadata"]["name"]
                    if "Deny" in actions and denied is None:
                        denied = (name, bname, decision)
                    if "Warn" in actions:
                        warnings.append(
                            f"Validation failed for ValidatingAdmissionPolicy '{name}' with binding "
                            f"'{bname}': {decision.message}"
                        )
                    if "Audit" in actions:
                        self._audit(req, name, bname, decision, actions)
        if denied is not None:
            raise self._denial(req, *denied)
        return warnings

    # ---------------------------------------------------------------------------------- decisions

    def _decisions(
        self, policy: dict[str, Any], binding: dict[str, Any], req: AdmissionRequest
    ) -> list[Decision]:
        spec = policy.get("spec") or {}
        fail = (spec.get("failurePolicy") or "Fail") == "Fail"
        try:
            params = self._params(spec.get("paramKind"), (binding.get("spec") or {}).get("paramRef"), req)
        except ConfigError as exc:
            return [Decision(f"failed to configure binding: {exc}")] if fail else []
        decisions: list[Decision] = []
        for param in params:
            activation = self._activation(req, param)
            # Variables are composited into every expression of the policy, matchConditions too.
            self._variables(spec.get("variables") or [], activation)
            try:
                if not self._conditions_hold(spec.get("matchConditions") or [], activation):
                    continue
            except CelError as exc:
                if fail:
                    decisions.append(Decision(str(exc)))
                continue
            for index, validation in enumerate(spec.get("validations") or []):
                decision = self._validate(validation, index, activation, fail)
                if decision is not None:
                    decisions.append(decision)
            self._audit_annotations(policy, spec.get("auditAnnotations") or [], activation, req)
        return decisions

    def _params(
        self, kind: dict[str, Any] | None, ref: dict[str, Any] | None, req: AdmissionRequest
    ) -> list[dict[str, Any] | None]:
        if not kind:
            return [None]
        info = registry.for_kind(kind.get("apiVersion", ""), kind.get("kind", ""))
        if info is None:
            raise ConfigError(
                "failed to find resource referenced by paramKind: "
                f"'{kind.get('apiVersion')}, Kind={kind.get('kind')}'"
            )
        if not ref:
            raise ConfigError("paramRef is required when paramKind is set")
        namespace: str | None = None
        if info.namespaced:
            namespace = ref.get("namespace") or req.namespace
            if not namespace:
                raise ConfigError(
                    "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources"
                )
        if ref.get("name"):
            found = self._get(info.plural, namespace, ref["name"])
            params = [found] if found is not None else []
        else:
            selector = ref.get("selector") if ref.get("selector") is not None else {}
            params = [
                p
                for p in self._list(info.plural, namespace)
                if label_selector_matches(selector, (p.get("metadata") or {}).get("labels"))
            ]
        if params:
            return list(params)
        if ref.get("parameterNotFoundAction") == "Deny":
            raise ConfigError("no params found for policy binding with `Deny` parameterNotFoundAction")
        return []

    def _activation(self, req: AdmissionRequest, param: dict[str, Any] | None) -> dict[str, Any]:
        namespace_object = None
        if req.info.namespaced:
            namespace_object = self._get("namespaces", None, req.namespace)
        gvk = {"group": req.info.group, "version": req.version, "kind": req.info.kind}
        gvr = {"group": req.info.group, "version": req.version, "resource": req.info.plural}
        request = {
            "kind": gvk,
            "resource": gvr,
            "subResource": req.subresource,
            "requestKind": gvk,
            "requestResource": gvr,
            "requestSubResource": req.subresource,
            "name": req.name,
            "namespace": req.namespace,
            "operation": req.operation,
            # authentication.k8s.io/v1 UserInfo: empty fields are omitted, as the server's are.
            "userInfo": {
                "username": req.username,
                "groups": list(req.groups),
                **({"uid": req.uid} if req.uid else {}),
                **({"extra": {k: list(v) for k, v in req.extra.items()}} if req.extra else {}),
            },
            "dryRun": req.dry_run,
            "options": req.options,
        }
        return {
            "object": to_cel(req.obj),
            "oldObject": to_cel(req.old),
            "request": to_cel(request),
            "params": to_cel(param),
            "namespaceObject": to_cel(namespace_object),
            "variables": celtypes.MapType({}),
        }

    def _conditions_hold(self, conditions: list[dict[str, Any]], activation: dict[str, Any]) -> bool:
        """All true: applies. Any false: does not (even when another errored). Else the errors."""
        errors: list[str] = []
        for condition in conditions:
            try:
                result = self._programs.evaluate(condition.get("expression", ""), activation)
            except CelError as exc:
                errors.append(str(exc))
                continue
            if not isinstance(result, (celtypes.BoolType, bool)):
                errors.append(f"matchCondition '{condition.get('name')}' did not evaluate to a bool")
            elif not result:
                return False
        if errors:
            raise CelError(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
        return True

    def _variables(self, variables: list[dict[str, Any]], activation: dict[str, Any]) -> None:
        values: dict[Any, Any] = {}
        for variable in variables:
            activation["variables"] = celtypes.MapType(dict(values))
            try:
                value = self._programs.evaluate(variable.get("expression", ""), activation)
            except CelError as exc:
                value = lazy_error(str(exc))
            values[celtypes.StringType(variable.get("name", ""))] = value
        activation["variables"] = celtypes.MapType(values)

    def _validate(
        self, validation: dict[str, Any], index: int, activation: dict[str, Any], fail: bool
    ) -> Decision | None:
        expression = validation.get("expression", "")
        try:
            result = self._programs.evaluate(expression, activation)
        except CelError as exc:
            return Decision(str(exc), "", index) if fail else None
        if not isinstance(result, (celtypes.BoolType, bool)):
            message = f"expression '{expression}' resulted in error: validation expression must be a bool"
            return Decision(message, "", index) if fail else None
        if result:
            return None
        message = ""
        if validation.get("messageExpression"):
            try:
                evaluated = self._programs.evaluate(validation["messageExpression"], activation)
            except CelError:
                evaluated = None
            if isinstance(evaluated, str) and "\n" not in str(evaluated).strip():
                message = str(evaluated).strip()
        if not message and validation.get("message"):
            message = str(validation["message"]).strip()
        if not message:
            message = f"failed expression: {expression.strip()}"
        return Decision(message, validation.get("reason") or "Invalid", index)

    # ---------------------------------------------------------------------------- answers, audit

    @staticmethod
    def _denial(req: AdmissionRequest, policy: str, binding: str, decision: Decision) -> ApiError:
        who = f"ValidatingAdmissionPolicy '{policy}' with binding '{binding}'"
        text = f"{who} denied request: {decision.message}"
        info = req.info
        resource = f"{info.plural}.{info.group}" if info.group else info.plural
        reason = decision.reason or "Invalid"
        # The message names the object even when request.name is empty (a generateName create).
        name = req.name or ((req.obj or req.old or {}).get("metadata") or {}).get("name", "")
        prefix = f'{resource} "{name}" is forbidden' if name else f"{resource} is forbidden"
        return ApiError(
            _CODES.get(reason, 422),
            reason,
            f"{prefix}: {text}",
            [{"message": text}],
            name=name or None,
            group=info.group or None,
            kind=info.plural,
        )

    def _audit(
        self, req: AdmissionRequest, policy: str, binding: str, decision: Decision, actions: list[str]
    ) -> None:
        failure = {
            "message": decision.message,
            "policy": policy,
            "binding": binding,
            "expressionIndex": decision.expression_index,
            "validationActions": actions,
        }
        self._record(req, {VALIDATION_FAILURE_ANNOTATION: json.dumps([failure], separators=(",", ":"))})

    def _audit_annotations(
        self,
        policy: dict[str, Any],
        annotations: list[dict[str, Any]],
        activation: dict[str, Any],
        req: AdmissionRequest,
    ) -> None:
        recorded: dict[str, str] = {}
        for annotation in annotations:
            try:
                value = self._programs.evaluate(annotation.get("valueExpression", ""), activation)
            except CelError:
                continue
            if isinstance(value, str):
                recorded[f"{policy['metadata']['name']}/{annotation.get('key')}"] = str(value)
        if recorded:
            self._record(req, recorded)

    def _record(self, req: AdmissionRequest, annotations: dict[str, str]) -> None:
        self.audit_events.append(
            {
                "verb": req.operation.lower(),
                "resource": req.info.plural,
                "subresource": req.subresource,
                "namespace": req.namespace,
                "name": req.name,
                "annotations": annotations,
            }
        )
        del self.audit_events[:-MAX_AUDIT_EVENTS]
