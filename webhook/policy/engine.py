"""Evaluate a pod against a `PolicySet` into one deterministic `Decision`.

Order: policies run by descending `priority`, then by name. Every matching policy's validations and warnings
apply; of the policies with a `claim`, only the first that matches builds the claim (later ones are listed as
shadowed). A namespace label `gpudra.io/mode: enforce|audit|off` overrides every policy's mode there.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dra.errors import CelError, CelRuntimeError, InputError, PolicyError

from . import _cel
from ._deps import Read, closure, path_closure, path_closure_levels, reads
from ._eval import Failed, check, run
from .decision import ContainerRequest, Decision, JsonView, Violation
from .facts import PodFacts, pod_facts
from .loader import CompiledExpr, CompiledPolicy, CompiledRule

__all__ = ["MODE_LABEL", "PolicySet"]

MODE_LABEL = "gpudra.io/mode"
_MODES = ("enforce", "audit", "off")
_INTERNAL = "InternalError"
# Memo tables are dropped whole when they reach this size (a pod decision never depends on what is in them).
_MEMO_MAX = 4096
# Inputs whose values `PodFacts.key` (gpu), the container's legacy counts and the policy itself (params) pin down.
_FACT_ROOTS = frozenset({"gpu", "params"})
_CLAIM_ROOTS = frozenset({"gpu", "params", "legacy"})
_KEYABLE = frozenset({"gpu", "params", "legacy", "container", "object", "oldObject", "request", "namespaceObject"})


def _json_copy(data: Any) -> Any:
    if type(data) is dict:
        return {k: _json_copy(v) for k, v in data.items()}
    if type(data) is list:
        return [_json_copy(v) for v in data]
    return data


def _leaves(node: Any) -> list[CompiledExpr]:
    if isinstance(node, CompiledExpr):
        return [node]
    if isinstance(node, dict):
        return [leaf for value in node.values() for leaf in _leaves(value)]
    if isinstance(node, list):
        return [leaf for value in node for leaf in _leaves(value)]
    return []


@dataclass(frozen=True)
class _Plan:
    """What of a policy can be memoized, decided once per policy from its expressions' sources.

    `fact_conditions`: how many leading matchConditions read only `gpu` and `params`, so their outcome is a
    function of the pod's GPU facts. `claim_from_facts`: the claim (tree and the variables it reads, transitively)
    reads only `gpu`, `legacy` and `params`, so a container's request is a function of those and its name.
    """

    fact_conditions: int
    claim_from_facts: bool
    # The (root, path) reads of the claim (tree and the variables it reads), when all are memo-keyable.
    claim_reads: tuple[Read, ...] | None = None

    @classmethod
    def of(cls, policy: CompiledPolicy) -> _Plan:
        count = 0
        for _name, condition in policy.match_conditions:
            roots, names = reads(condition.source)
            if names or not roots <= _FACT_ROOTS:
                break
            count += 1
        from_facts = False
        if policy.claim is not None:
            claim_vars = {name: expr.source for name, expr in policy.claim.variables}
            pod_vars = {name: expr.source for name, expr in policy.variables}
            sources = [leaf.source for leaf in _leaves(policy.claim.tree)]
            found = closure(sources, [claim_vars, pod_vars])
            from_facts = found is not None and found <= _CLAIM_ROOTS
            claim_paths = path_closure_levels(sources, [claim_vars, pod_vars])
            if claim_paths is not None and all(root in _KEYABLE for root, _p in claim_paths):
                return cls(count, from_facts, tuple(sorted(claim_paths)))
        return cls(count, from_facts)


def _verdict(violation: Violation, audit: bool = False) -> str:
    if violation.reason == _INTERNAL:
        return f"GPUClaimPolicy '{violation.policy}' could not be evaluated: {violation.message}"
    return f"GPUClaimPolicy '{violation.policy}' {'would deny' if audit else 'denied'} the pod: {violation.message}"


_UNKNOWN = object()
_ROOT_INPUTS = frozenset({"object", "oldObject", "request", "namespaceObject"})


def _fingerprint(value: Any, path: tuple[str, ...]) -> Any:
    """What an expression reading `path` of `value` can see: how deep the path exists, and the JSON text of the
    value it stops at ("" when a mapping lacks the next field); None when that value is not JSON."""
    depth = 0
    for part in path:
        if type(value) is not dict:
            break
        if part not in value:
            return (depth, "")
        value = value[part]
        depth += 1
    try:
        return (depth, json.dumps(value, allow_nan=False))
    except (TypeError, ValueError):
        return None


class _Inputs:
    """Memoizes a pod-level expression's value by the values at the field paths it can read (see `_deps.paths`).

    The key is (policy, expression, the JSON text of the subtree at each path, or where the path stops being a
    mapping); `gpu` is keyed by the facts key and `params` by the policy. An input that is not JSON is never
    memoized. Failures are not memoized, so they are raised again, by the same evaluation, every time.
    """

    __slots__ = ("_set", "_base", "_facts", "_seen")

    def __init__(self, owner: PolicySet, base: Mapping[str, Any], facts_key: Any) -> None:
        self._set = owner
        self._base = base
        self._facts = facts_key
        self._seen: dict[Read, Any] = {}

    def _fingerprint(self, read: Read) -> Any:
        found = self._seen.get(read, _UNKNOWN)
        if found is _UNKNOWN:
            found = self._seen[read] = _fingerprint(self._base[read[0]], read[1])
        return found

    def claim_key(self, policy: CompiledPolicy, reads_: tuple[Read, ...], local: Mapping[str, Any]) -> Any:
        """The memo key of one container's claim request, or None when an input is not JSON."""
        parts: list[Any] = [id(policy), self._facts]
        for root, path in reads_:
            if root in _ROOT_INPUTS:
                fingerprint = self._fingerprint((root, path))
            elif root in ("container", "legacy"):
                fingerprint = _fingerprint(local[root], path)
            else:
                continue  # gpu: the facts key; params: the policy
            if fingerprint is None:
                return None
            parts.append(fingerprint)
        return tuple(parts)

    def value(
        self,
        policy: CompiledPolicy,
        expr: CompiledExpr,
        compute: Callable[[], Any],
        variables: _Variables | None = None,
    ) -> Any:
        """`compute()`, or its memoized value; on a hit the variables it read are read again, in the same order,
        so that the decision lists the same variables (`Decision.variables` shows those read)."""
        reads_ = self._set._reads.get(id(expr))
        if reads_ is None:
            return compute()
        parts: list[Any] = [id(policy), id(expr), self._facts if reads_ and reads_[0][0] == "gpu" else None]
        for read in reads_:
            if read[0] in _ROOT_INPUTS:
                fingerprint = self._fingerprint(read)
                if fingerprint is None:
                    return compute()
                parts.append(fingerprint)
        key = tuple(parts)
        memo = self._set._value_memo
        found = memo.get(key)
        if found is not None:
            value, names = found
            if variables is not None:
                for name in names:
                    variables[name]
            return value
        log: list[str] = []
        if variables is not None:
            variables._logs.append(log)
        try:
            value = compute()
        finally:
            if variables is not None:
                variables._logs.remove(log)
        if len(memo) >= _MEMO_MAX:
            memo.clear()
        memo[key] = (value, tuple(dict.fromkeys(log)))
        return value


class _Variables(dict[str, Any]):
    """The CEL `variables` map: each variable is evaluated when first read (as in ValidatingAdmissionPolicy).

    Only this level's values are items; names of the level above (`parent`, the pod-level variables seen from a
    claim) are read through. An error in a variable is a CEL runtime error of the expression that reads it.
    """

    __slots__ = ("_pending", "_activation", "_parent", "_running", "_memo", "_logs")

    def __init__(
        self,
        variables: Sequence[tuple[str, CompiledExpr]],
        activation: Mapping[str, Any],
        parent: Mapping[str, Any] | None = None,
        memo: tuple[_Inputs, CompiledPolicy] | None = None,
    ) -> None:
        super().__init__()
        self._pending = dict(variables)
        self._activation = activation
        self._parent = parent
        self._running: set[str] = set()
        self._memo = memo
        self._logs: list[list[str]] = []  # open `_Inputs.value` recordings: every name read is appended

    def __getitem__(self, name: str) -> Any:
        for log in self._logs:
            log.append(name)
        return dict.__getitem__(self, name)

    def __missing__(self, name: str) -> Any:
        expr = self._pending.get(name)
        if expr is None:
            if self._parent is not None:
                return self._parent[name]
            raise KeyError(name)
        if name in self._running:
            raise CelRuntimeError(f"variable '{name}' refers to itself")
        self._running.add(name)
        try:
            if self._memo is None:
                value = _cel.evaluate(expr.program, self._activation)
            else:
                inputs, policy = self._memo
                value = inputs.value(policy, expr, lambda: _cel.evaluate(expr.program, self._activation), self)
        except CelError as exc:
            where = f"{expr.file}:{expr.line}:{expr.column}" if expr.line is not None else expr.file
            raise CelRuntimeError(f"variables.{name} ({where}): {exc.message}") from exc
        finally:
            self._running.discard(name)
        self[name] = value
        return value

    def __contains__(self, name: object) -> bool:
        return (
            dict.__contains__(self, name)
            or name in self._pending
            or (self._parent is not None and name in self._parent)
        )

    def force(self) -> None:
        """Evaluate every variable of this level, in order (for `explain` and policy tests)."""
        for name, expr in self._pending.items():
            if not dict.__contains__(self, name):
                try:
                    self[name]
                except CelError as exc:
                    raise Failed(expr.error(f"evaluation error: {exc.message}")) from exc


def _message(
    rule: CompiledRule, activation: Mapping[str, Any], inputs: _Inputs | None = None, policy: Any = None
) -> str:
    if rule.message_expression is not None:
        expr = rule.message_expression
        if inputs is None:
            value = run(expr, activation)
        else:
            value = inputs.value(policy, expr, lambda: run(expr, activation), activation.get("variables"))
        if isinstance(value, str) and value.strip():
            return value
    if rule.message:
        return rule.message
    return f"failed expression: {rule.expression.source}"


def _namespace_name(pod: Mapping[str, Any], namespace: Mapping[str, Any] | None, request: Mapping[str, Any]) -> str:
    for candidate in (
        (pod.get("metadata") or {}).get("namespace"),
        request.get("namespace"),
        ((namespace or {}).get("metadata") or {}).get("name"),
    ):
        if isinstance(candidate, str) and candidate:
            return candidate
    return "default"


def _namespace_mode(namespace: Mapping[str, Any] | None) -> str | None:
    labels = ((namespace or {}).get("metadata") or {}).get("labels") or {}
    value = labels.get(MODE_LABEL)
    return value if value in _MODES else None


@dataclass
class _Run:
    """Mutable state of one evaluation; frozen into a `Decision` at the end."""

    matched: list[str] = field(default_factory=list)
    shadowed: list[str] = field(default_factory=list)
    variables: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    violations: list[Violation] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    audit: list[str] = field(default_factory=list)
    chosen: CompiledPolicy | None = None
    chosen_mode: str | None = None
    claim: dict[str, Any] | None = None
    containers: list[ContainerRequest] = field(default_factory=list)

    def violate(
        self, policy: CompiledPolicy, mode: str, message: str, reason: str, expression: str, where: str
    ) -> None:
        violation = Violation(policy.name, message, reason, mode, where, expression)
        self.violations.append(violation)
        if mode == "audit":
            self.audit.append(_verdict(violation, audit=True))
            self.warnings.append("audit: " + _verdict(violation, audit=True))


@dataclass(frozen=True)
class PolicySet:
    """Compiled policies in evaluation order, plus the errors of the documents that did not load."""

    policies: tuple[CompiledPolicy, ...]
    errors: tuple[PolicyError, ...] = ()
    all_variables: bool = False
    # Off: every expression is evaluated for every pod (the benchmark's cold baseline; decisions are the same).
    memoize: bool = True
    _plans: dict[int, _Plan] = field(default_factory=dict, init=False, repr=False, compare=False)
    # Memo tables (see `_Plan`): GPU facts key → `gpu` value; (policy, facts) → leading conditions' outcome;
    # (policy, facts, container name, legacy) → built request and the container's claim variables.
    _gpu_memo: dict[Any, dict[str, Any]] = field(default_factory=dict, init=False, repr=False, compare=False)
    _match_memo: dict[Any, bool] = field(default_factory=dict, init=False, repr=False, compare=False)
    _claim_memo: dict[Any, tuple[Any, Any, tuple[str, ...]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    # Pod-level expressions → the (root, path) reads their value depends on (variables followed); see `_Inputs`.
    _reads: dict[int, tuple[Read, ...]] = field(default_factory=dict, init=False, repr=False, compare=False)
    _value_memo: dict[Any, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for policy in self.policies:
            self._plans[id(policy)] = _Plan.of(policy)
            variables = {name: expr.source for name, expr in policy.variables}
            exprs = [c for _n, c in policy.match_conditions] + [v for _n, v in policy.variables]
            for rule in (*policy.validations, *policy.warnings):
                exprs.append(rule.expression)
                if rule.message_expression is not None:
                    exprs.append(rule.message_expression)
            for expr in exprs:
                found = path_closure([expr.source], variables)
                # Claim-scope roots cannot appear at pod level (compile rejects them there); be safe regardless.
                if found is not None and all(root in _ROOT_INPUTS or root in _FACT_ROOTS for root, _p in found):
                    # `gpu` reads first: `_Inputs.value` keys them all by the facts key.
                    self._reads[id(expr)] = tuple(sorted(found, key=lambda r: (r[0] != "gpu", r)))

    @classmethod
    def of(
        cls, policies: Sequence[CompiledPolicy], errors: Sequence[PolicyError] = (), *, memoize: bool = True
    ) -> PolicySet:
        ordered = sorted(policies, key=lambda p: (-p.priority, p.name))
        return cls(tuple(ordered), tuple(errors), memoize=memoize)

    def explaining(self) -> PolicySet:
        """The same policies, evaluating every variable (not only those read) so a decision shows them all."""
        return PolicySet(self.policies, self.errors, all_variables=True)

    def expression_sources(self) -> list[str]:
        """The source of every CEL expression in the set (for conservative dependency checks by callers)."""
        out: list[str] = []
        for policy in self.policies:
            out.extend(c.source for _n, c in policy.match_conditions)
            out.extend(v.source for _n, v in policy.variables)
            for rule in (*policy.validations, *policy.warnings):
                out.append(rule.expression.source)
                if rule.message_expression is not None:
                    out.append(rule.message_expression.source)
            if policy.claim is not None:
                out.extend(v.source for _n, v in policy.claim.variables)
                out.extend(leaf.source for leaf in _leaves(policy.claim.tree))
        return out

    def memo_sizes(self) -> dict[str, int]:
        """Entries in the memo tables (for tests and benchmarks)."""
        return {
            "gpu": len(self._gpu_memo),
            "match": len(self._match_memo),
            "claim": len(self._claim_memo),
            "value": len(self._value_memo),
        }

    def names(self) -> list[str]:
        return [p.name for p in self.policies]

    def evaluate(
        self,
        pod: Mapping[str, Any],
        namespace: Mapping[str, Any] | None = None,
        request: Mapping[str, Any] | None = None,
    ) -> Decision:
        """Decide what happens to `pod` (Kubernetes JSON) given its Namespace object and admission request."""
        request = dict(request or {})
        ns_name = _namespace_name(pod, namespace, request)
        request.setdefault("operation", "CREATE")
        request.setdefault("namespace", ns_name)
        request.setdefault("dryRun", False)
        try:
            facts = pod_facts(pod)
        except InputError as exc:
            return Decision(False, f"pod cannot be read: {exc}", "Invalid", namespace=ns_name)
        # JSON data already is CEL runtime data (`dra.cel.from_json` is a deep copy that only changes ints beyond
        # int64, which Kubernetes objects do not hold), and CEL never mutates its input: no copies are made.
        key = facts.key
        gpu = self._gpu_memo.get(key) if self.memoize else facts.to_cel()
        if gpu is None:
            if len(self._gpu_memo) >= _MEMO_MAX:
                self._gpu_memo.clear()
            gpu = self._gpu_memo[key] = facts.to_cel()
        base = {
            "object": pod,
            "oldObject": None,
            "request": request,
            "namespaceObject": namespace,
            "gpu": gpu,
        }
        ns_mode = _namespace_mode(namespace)
        state = _Run()
        inputs = None if self.all_variables or not self.memoize else _Inputs(self, base, key)
        for policy in self.policies:
            mode = ns_mode or policy.mode
            if mode == "off":
                continue
            try:
                self._apply(policy, mode, base, pod, facts, state, inputs)
            except Failed as failed:
                self._failed(policy, mode, failed.error, state)
        return self._decide(state, ns_name)

    def _apply(
        self,
        policy: CompiledPolicy,
        mode: str,
        base: dict[str, Any],
        pod: Mapping[str, Any],
        facts: PodFacts,
        state: _Run,
        inputs: _Inputs | None = None,
    ) -> None:
        activation = dict(base)

        def test(expr: CompiledExpr) -> bool:
            if inputs is None:
                return check(expr, activation)
            result: bool = inputs.value(policy, expr, lambda: check(expr, activation), activation.get("variables"))
            return result

        activation["params"] = policy.params
        plan = self._plans.get(id(policy)) or _Plan.of(policy)
        conditions = policy.match_conditions
        if plan.fact_conditions and self.memoize:
            memo_key = (id(policy), facts.key)
            matched = self._match_memo.get(memo_key)
            if matched is None:
                matched = all(check(c, activation) for _n, c in conditions[: plan.fact_conditions])
                if len(self._match_memo) >= _MEMO_MAX:
                    self._match_memo.clear()
                self._match_memo[memo_key] = matched
            if not matched:
                return
            conditions = conditions[plan.fact_conditions :]
        for _name, condition in conditions:
            if not test(condition):
                return
        if policy.claim is not None and state.chosen is not None:
            state.shadowed.append(policy.name)
            return
        state.matched.append(policy.name)
        values = _Variables(policy.variables, activation, memo=None if inputs is None else (inputs, policy))
        activation["variables"] = values
        if self.all_variables:
            values.force()
        state.variables[policy.name] = JsonView(values)
        failed_validation = False
        for rule in policy.validations:
            if not test(rule.expression):
                failed_validation = True
                message = _message(rule, activation, inputs, policy)
                state.violate(policy, mode, message, rule.reason, rule.expression.source, policy.where)
        for rule in policy.warnings:
            if not test(rule.expression):
                state.warnings.append(_message(rule, activation, inputs, policy))
        if policy.claim is not None:
            state.chosen, state.chosen_mode = policy, mode
            if facts.legacy_containers and not failed_validation:
                self._claim(policy, activation, pod, facts, state, inputs)

    def _claim(
        self,
        policy: CompiledPolicy,
        activation: dict[str, Any],
        pod: Mapping[str, Any],
        facts: PodFacts,
        state: _Run,
        inputs: _Inputs | None = None,
    ) -> None:
        from ._claim import BuiltRequest, build_request

        assert policy.claim is not None
        requests: list[dict[str, Any]] = []
        constraints: list[dict[str, Any]] = []
        config: list[dict[str, Any]] = []
        plan = self._plans.get(id(policy)) or _Plan.of(policy)
        parent: _Variables = activation["variables"]
        for container in facts.legacy_containers:
            local = dict(activation)
            local["container"] = pod["spec"][container.kind][container.index]
            local["legacy"] = dict(container.legacy)
            memo_key: Any = None
            if self.memoize and not self.all_variables:
                if plan.claim_from_facts:
                    memo_key = (id(policy), facts.key, container.name, tuple(container.legacy.items()))
                elif plan.claim_reads is not None and inputs is not None:
                    found_key = inputs.claim_key(policy, plan.claim_reads, local)
                    memo_key = None if found_key is None else (*found_key, container.name)
            hit = self._claim_memo.get(memo_key) if memo_key is not None else None
            if hit is not None:
                built, own, names = hit
                for name in names:  # the pod-level variables building it read, as `_Inputs.value` does
                    parent[name]
            else:
                own = _Variables(policy.claim.variables, local, parent=parent)
                local["variables"] = own
                if self.all_variables:
                    own.force()
                log: list[str] = []
                parent._logs.append(log)
                try:
                    built = build_request(policy.claim.tree, local, container.name, policy)
                finally:
                    parent._logs.remove(log)
                if memo_key is not None:
                    if len(self._claim_memo) >= _MEMO_MAX:
                        self._claim_memo.clear()
                    self._claim_memo[memo_key] = (built, own, tuple(dict.fromkeys(log)))
            if memo_key is not None:  # the memo's objects are shared: hand out copies
                built = BuiltRequest(_json_copy(built.request), _json_copy(built.constraints), _json_copy(built.config))
            requests.append(built.request)
            constraints.extend(built.constraints)
            config.extend(built.config)
            state.containers.append(
                ContainerRequest(
                    container=container.name,
                    kind=container.kind,
                    index=container.index,
                    request=container.name,
                    replaces=dict(container.legacy),
                    variables=JsonView(own),
                )
            )
        devices: dict[str, Any] = {"requests": requests}
        if constraints:
            devices["constraints"] = constraints
        if config:
            devices["config"] = config
        state.claim = {"devices": devices}
        from ._claim import validate_claim

        problems = validate_claim(state.claim)
        if problems:
            error = PolicyError(
                "the claim it builds is not a valid ResourceClaimSpec: " + "; ".join(problems),
                file=policy.file,
                line=policy.line,
            )
            raise Failed(error)

    def _failed(self, policy: CompiledPolicy, mode: str, error: PolicyError, state: _Run) -> None:
        if state.chosen is policy:
            state.claim, state.containers = None, []
        if policy.failure_policy == "Ignore":
            state.warnings.append(
                f"GPUClaimPolicy '{policy.name}' could not be evaluated (failurePolicy Ignore): {error}"
            )
            return
        line = f"{error.file}:{error.line}" if error.line is not None else error.file
        state.violate(policy, mode, str(error), _INTERNAL, error.expression, line)

    def _decide(self, state: _Run, ns_name: str) -> Decision:
        denials = [v for v in state.violations if v.mode == "enforce"]
        allowed = not denials
        message = "; ".join(_verdict(v) for v in denials)
        chosen = state.chosen
        return Decision(
            allowed=allowed,
            message=message,
            reason=denials[0].reason if denials else "",
            policy=chosen.name if chosen is not None else None,
            mode=state.chosen_mode,
            namespace=ns_name,
            matched=tuple(state.matched),
            shadowed=tuple(state.shadowed),
            variables=state.variables,
            claim=state.claim,
            containers=tuple(state.containers),
            violations=tuple(state.violations),
            warnings=tuple(state.warnings),
            audit=tuple(state.audit),
        )
