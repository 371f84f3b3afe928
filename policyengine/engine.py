"""Evaluate a pod against a `PolicySet` into one deterministic `Decision`.

Policies run by descending `priority`, then name; every matching policy's validations and warnings apply; of the
policies with a `claim` the first that matches builds it (later ones are shadowed). A namespace label
`gpudra.io/mode` overrides every policy's mode there. One evaluation's expressions share a `cel.EvaluationBudget`;
under a `dra.cancellation` deadline it stops between policies, containers, expressions and inside CEL loops.
"""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dra import cel
from dra.cancellation import check_deadline
from dra.errors import CelError, CelRuntimeError, InputError, PolicyError
from dra.quantity import Quantity
from dra.sizing import SizingLookup

from . import _cel
from ._claim import build_request, claim_expressions, validate_claim
from ._eval import Failed, check, run
from ._memo import ClaimEntry, ClaimFacts, DecisionEntry, Outcome, PodMemo, PolicyMemo, weigh
from .claim_check import ClaimCheck
from .decision import ContainerRequest, Decision, JsonView, Violation, claim_digest, pod_order
from .facts import ContainerFacts, PodFacts, pod_facts
from .loader import CompiledExpr, CompiledPolicy, CompiledRule
from .per_container import container_request, merge_decisions

__all__ = ["MODE_LABEL", "PolicySet"]

MODE_LABEL = "gpudra.io/mode"
_MODES = ("enforce", "audit", "off")
_INTERNAL = "InternalError"


def _sizing_notes(facts: PodFacts) -> dict[str, str]:
    """How each GPU container's memory was sized, where evidence other than the pod's annotation decided it."""
    notes = {}
    for container in facts.legacy_containers:
        sizing = container.sizing
        if sizing.source in ("observed", "model") and sizing.vram_bytes:
            vram = Quantity.from_int(sizing.vram_bytes, "BinarySI")
            notes[container.name] = f"{vram} from {sizing.source}: {sizing.reason}"
    return notes


def _weigh_variables(view: Mapping[str, Any]) -> int:
    """`weigh` of a decision's variables map: the weights `_Variables` recorded as its values were set."""
    values = view.cel_values if isinstance(view, JsonView) else view
    if isinstance(values, _Variables):
        return 64 + values.held
    return weigh(dict(values))


def _held_bytes(
    message: str,
    warnings: Sequence[str],
    audit: Sequence[str],
    claim: Mapping[str, Any] | None,
    claim_weight: int | None,
    variables: Mapping[str, Mapping[str, Any]],
    containers: Sequence[ContainerRequest],
) -> int:
    """Roughly what a decision keeps alive besides its pod: the variables it read, the claim, messages, warnings
    (a cache of decisions is charged this, on top of its key's inputs). Each variable's value is weighed once,
    when it is computed (a memoized value carries its weight), not again for every decision holding it;
    `claim_weight` is the claim's, when the caller has it."""
    held = weigh(message) + weigh(list(warnings)) + weigh(list(audit))
    if claim is not None:
        held += claim_weight if claim_weight is not None else weigh(dict(claim))
    for view in variables.values():
        held += _weigh_variables(view)
    for container in containers:
        held += _weigh_variables(container.variables)
    return held


def _verdict(violation: Violation, audit: bool = False) -> str:
    if violation.reason == _INTERNAL:
        return f"GPUClaimPolicy '{violation.policy}' could not be evaluated: {violation.message}"
    return f"GPUClaimPolicy '{violation.policy}' {'would deny' if audit else 'denied'} the pod: {violation.message}"


class _Variables(dict[str, Any]):
    """The CEL `variables` map: each variable is evaluated when first read (as in ValidatingAdmissionPolicy).

    Only this level's values are items; names of the level above (`parent`, the pod-level variables seen from a
    claim) are read through. An error in a variable is a CEL runtime error of the expression that reads it.
    """

    __slots__ = ("_pending", "_activation", "_parent", "_running", "_memo", "_logs", "_weights", "held")

    def __init__(
        self,
        variables: Sequence[tuple[str, CompiledExpr]],
        activation: Mapping[str, Any],
        parent: Mapping[str, Any] | None = None,
        memo: tuple[PodMemo, CompiledPolicy] | None = None,
    ) -> None:
        super().__init__()
        self._pending = dict(variables)
        # A copy without `variables`: the activation a caller evaluates its rules in holds this map as `variables`,
        # and holding that activation here would be a reference cycle (freed only by the cyclic collector)
        self._activation = dict(activation)
        self._activation.pop("variables", None)
        self._parent = parent
        self._running: set[str] = set()
        self._memo = memo
        self._logs: list[list[str]] = []  # open recordings (see `start_recording`): every name read is appended
        # `weigh` of each of this level's values, and of all its items as a dict of them is charged (less its 64)
        self._weights: dict[str, int] = {}
        self.held = 0

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
                value = _cel.evaluate(expr.program, self._evaluation())
                weight = weigh(value)
            else:
                pod_memo, policy = self._memo
                value, weight = pod_memo.weighed(
                    policy, expr, lambda: _cel.evaluate(expr.program, self._evaluation()), self
                )
        except CelError as exc:
            where = f"{expr.file}:{expr.line}:{expr.column}" if expr.line is not None else expr.file
            raise CelRuntimeError(f"variables.{name} ({where}): {exc.message}") from exc
        finally:
            self._running.discard(name)
        self[name] = value
        self._weights[name] = weight
        self.held += 49 + len(name) + weight
        return value

    def _evaluation(self) -> dict[str, Any]:
        """The activation a variable's expression runs in: the caller's, with this map as `variables`."""
        activation = dict(self._activation)
        activation["variables"] = self
        return activation

    def restore(self, values: Sequence[tuple[str, Any, int]]) -> None:
        """Set values read before (an `Outcome`'s), in their order, with their weights."""
        for name, value, weight in values:
            dict.__setitem__(self, name, value)
            self._weights[name] = weight
            self.held += 49 + len(name) + weight

    def restore_settled(self, settled: _Variables) -> None:
        """Set every value of `settled` (a `settled` copy of a map of the same variables), with its weights."""
        dict.update(self, settled)
        self._weights = dict(settled._weights)
        self.held = settled.held

    def weighed_items(self) -> tuple[tuple[str, Any, int], ...]:
        """(name, value, weight) of this level's values, in the order they were read (see `restore`)."""
        weights = self._weights
        return tuple((name, value, weights[name]) for name, value in dict.items(self))

    def start_recording(self) -> list[str]:
        """Open a log that every name read is appended to, until `stop_recording` (recordings nest)."""
        log: list[str] = []
        self._logs.append(log)
        return log

    def stop_recording(self, log: list[str]) -> None:
        assert self._logs[-1] is log, "recordings nest"
        self._logs.pop()

    def __contains__(self, name: object) -> bool:
        return (
            dict.__contains__(self, name)
            or name in self._pending
            or (self._parent is not None and name in self._parent)
        )

    def settled(self) -> _Variables:
        """This level's values read so far, with their weights, detached from the activation they were computed in.
        What outlives the evaluation (a memo entry) keeps this: the activation holds the review's
        whole pod, so keeping it would keep every large pod a cache entry was first built from (measured: 64 reviews
        of 2.5 MB pods left 39 MiB of parsed JSON alive)."""
        copy = _Variables((), {})
        for name, value in dict.items(self):
            dict.__setitem__(copy, name, value)
        copy._weights = dict(self._weights)
        copy.held = self.held
        return copy

    def force(self) -> None:
        """Evaluate every variable of this level, in order (for `explain` and policy tests)."""
        for name, expr in self._pending.items():
            if not dict.__contains__(self, name):
                try:
                    self[name]
                except CelError as exc:
                    raise Failed(expr.error(f"evaluation error: {exc.message}")) from exc


def _message(
    rule: CompiledRule, activation: Mapping[str, Any], pod_memo: PodMemo | None = None, policy: Any = None
) -> str:
    if rule.message_expression is not None:
        expr = rule.message_expression
        if pod_memo is None:
            value = run(expr, activation)
        else:
            value = pod_memo.value(policy, expr, lambda: run(expr, activation), activation.get("variables"))
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


def _reissue(entry: DecisionEntry, base: Mapping[str, Any], pod_memo: PodMemo, with_variables: bool = True) -> Decision:
    """A fresh decision from a memoized one (`PolicySet._entry`): its own claim (loaded from the pickle), pod-level
    variables restored into maps over this evaluation's inputs, as `_replay` makes them, and its own mappings.
    Without `with_variables`, none are restored: the decision is then `without_variables()` of the one restored."""
    stored = entry.decision
    variables: dict[str, Mapping[str, Any]] = {}
    for policy, settled in entry.variables if with_variables else ():
        activation = dict(base)
        activation["params"] = policy.params
        values = _Variables(policy.variables, activation, memo=(pod_memo, policy))
        values.restore_settled(settled)
        variables[policy.name] = JsonView(values)
    containers = []
    for request in stored.containers:
        copy = object.__new__(ContainerRequest)
        copy.__dict__.update(request.__dict__)
        copy.__dict__["replaces"] = dict(request.replaces)
        if not with_variables:
            copy.__dict__["variables"] = {}
        containers.append(copy)
    decision = object.__new__(Decision)
    decision.__dict__.update(stored.__dict__)
    decision.__dict__.update(
        variables=variables,
        containers=tuple(containers),
        claim=pickle.loads(stored.claim_blob) if stored.claim_blob is not None else None,
        unmatched={},
        sizing=dict(stored.sizing),
    )
    return decision


@dataclass
class _Run:
    """Mutable state of one evaluation; frozen into a `Decision` at the end."""

    matched: list[str] = field(default_factory=list)
    shadowed: list[str] = field(default_factory=list)
    unmatched: dict[str, tuple[str, str]] = field(default_factory=dict)  # explain: policy -> the false condition
    variables: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    violations: list[Violation] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    audit: list[str] = field(default_factory=list)
    chosen: CompiledPolicy | None = None
    chosen_mode: str | None = None
    claim: dict[str, Any] | None = None
    claim_weight: int | None = None  # `weigh` of `claim`, when known
    claim_digest: str = ""  # see `Decision.claim_digest`
    claim_blob: bytes | None = None  # see `Decision.claim_blob`
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
    # Set: every decided claim is checked against device shapes before it leaves (`with_claim_check`).
    claim_check: ClaimCheck | None = field(default=None, repr=False, compare=False)
    _memo: PolicyMemo = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_memo", PolicyMemo(self.policies))

    @classmethod
    def of(
        cls, policies: Sequence[CompiledPolicy], errors: Sequence[PolicyError] = (), *, memoize: bool = True
    ) -> PolicySet:
        ordered = sorted(policies, key=lambda p: (-p.priority, p.name))
        return cls(tuple(ordered), tuple(errors), memoize=memoize)

    def with_claim_check(self, check: ClaimCheck | None) -> PolicySet:
        """The same policies, each decided claim checked by `check` (`policyengine.claim_check`; None: unchecked)."""
        return dataclasses.replace(self, claim_check=check)

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
                out.extend(leaf.source for leaf in claim_expressions(policy.claim.tree))
        return out

    def memo_sizes(self) -> dict[str, int]:
        """Entries in the memo tables (for tests and benchmarks)."""
        return self._memo.sizes()

    def memo_bytes(self) -> dict[str, int]:
        """Bytes held by each memo table (each bounded by `_memo.MAX_BYTES`)."""
        return self._memo.weights()

    def names(self) -> list[str]:
        return [p.name for p in self.policies]

    def evaluate(
        self,
        pod: Mapping[str, Any],
        namespace: Mapping[str, Any] | None = None,
        request: Mapping[str, Any] | None = None,
        *,
        dra_devices: int = 0,
        sizing: SizingLookup | None = None,
        extended_resources: Mapping[str, str] | None = None,
        with_variables: bool = True,
        memoize_facts: bool = True,
    ) -> Decision:
        """Decide what happens to `pod` (Kubernetes JSON) given its Namespace object and admission request;
        `dra_devices` is what the claims and templates it names ask for (`gpu.draDevices`); `sizing` answers
        observed-usage recommendations by workload owner (`gpu.containers[].sizing`; None: no observed source).
        `extended_resources` is the cluster's KEP-5004 mapping, extended resource -> DeviceClass
        (`gpu.extendedResourceMapping`). The sizing and the mapping are part of the pod's GPU facts, so the memo keys
        decisions by them. Without `with_variables` the decision is `without_variables()` of the one it would be,
        for a caller that never shows them (a memoized decision is then reissued without restoring them). Without
        `memoize_facts` the pod's facts are read afresh and not kept: for a caller that knows the pod is too large
        to key by its text (the key writes out its containers: 5 ms for a pod with 2.5 MB of environment)."""
        request = dict(request or {})
        ns_name = _namespace_name(pod, namespace, request)
        request.setdefault("operation", "CREATE")
        request.setdefault("namespace", ns_name)
        request.setdefault("dryRun", False)

        def read() -> PodFacts:
            return pod_facts(
                pod, dra_devices=dra_devices, sizing=sizing, namespace=ns_name, extended_resources=extended_resources
            )

        try:
            # Observed usage is read from outside the pod at each review: facts sized by it are never memoized.
            if self.memoize and sizing is None and memoize_facts:
                facts = self._memo.pod_facts(pod, dra_devices, extended_resources, read)
            else:
                facts = read()
        except InputError as exc:
            return Decision(False, f"pod cannot be read: {exc}", "Invalid", namespace=ns_name)
        if len(facts.claim_containers) < 2 and not facts.joined_inits:
            return self._evaluate_facts(pod, namespace, request, facts, ns_name, with_variables=with_variables)
        # Decisions are per container: the policies without a claim see the whole pod, and the claim policies decide
        # each container in its own view of the facts, so one container's resources (a MIG sidecar) never change
        # another's decision (the tensor-parallel server beside it).
        whole = self._evaluate_facts(pod, namespace, request, facts, ns_name, False, with_variables)
        parts = [
            self._evaluate_facts(pod, namespace, request, facts.view(c), ns_name, True, with_variables)
            for c in facts.claim_containers
        ]
        # Each container's request was checked alone; the joined claim is checked again, as the scheduler sees it:
        # requests that each fit may not fit together (a 1-GPU and a 2-GPU container on a node of 2).
        return self._checked(merge_decisions(whole, parts, facts.joined_inits), namespace)

    def _evaluate_facts(
        self,
        pod: Mapping[str, Any],
        namespace: Mapping[str, Any] | None,
        request: dict[str, Any],
        facts: PodFacts,
        ns_name: str,
        claims: bool | None = None,
        with_variables: bool = True,
    ) -> Decision:
        """`evaluate` with the pod's facts read (the whole pod's, or one container's `PodFacts.view`); `claims`:
        only the policies with a claim (True), only those without (False), or all (None); `with_variables` as
        `evaluate`'s."""
        # JSON data already is CEL runtime data (`dra.cel.from_json` is a deep copy that only changes ints beyond
        # int64, which Kubernetes objects do not hold), and CEL never mutates its input: no copies are made.
        token, gpu = self._memo.gpu(facts) if self.memoize else (None, facts.to_cel())
        base = {
            "object": pod,
            "oldObject": None,
            "request": request,
            "namespaceObject": namespace,
            "gpu": gpu,
            "pod": {"schedulerName": facts.scheduler_name},
            _cel.BUDGET_KEY: cel.EvaluationBudget(),
        }
        ns_mode = _namespace_mode(namespace)
        state = _Run()
        pod_memo = None if self.all_variables or token is None else self._memo.for_pod(base, token)
        whole_key = None if pod_memo is None else pod_memo.decision_key(claims, ns_mode, ns_name, pod, facts)
        if whole_key is not None and pod_memo is not None:
            entry = self._memo.decision(whole_key)
            if entry is not None:
                check_deadline()
                return self._checked(_reissue(entry, base, pod_memo, with_variables), namespace)
        failures = False
        for policy in self.policies:
            mode = ns_mode or policy.mode
            if mode == "off" or (claims is not None and (policy.claim is not None) != claims):
                continue
            check_deadline()
            try:
                self._apply(policy, mode, base, pod, facts, token, state, pod_memo)
            except Failed as failed:
                failures = True
                self._failed(policy, mode, failed.error, state)
        # What sizing could not read (an expansion or script cut at its budget) is said whatever the mode, so an
        # enforced claim sized from a partial read is never silent.
        state.warnings.extend(facts.warnings)
        decision = self._decide(state, ns_name, sizing=_sizing_notes(facts), sizing_source=facts.sizing.source)
        # Failures are never memoized (as in every memo table): they are met again, by the same evaluation.
        if whole_key is not None and not failures:
            entry = self._entry(decision, state)
            if entry is not None:
                self._memo.store_decision(whole_key, entry)
        return self._checked(decision if with_variables else decision.without_variables(), namespace)

    def _entry(self, decision: Decision, state: _Run) -> DecisionEntry | None:
        """What the decision memo keeps of `decision` (`DecisionEntry`); None when its claim has no pickle to load
        fresh copies from."""
        if decision.claim is not None and decision.claim_blob is None:
            return None
        by_name = {policy.name: policy for policy in self.policies}
        variables = []
        for name, view in state.variables.items():
            values = view.cel_values if isinstance(view, JsonView) else view
            if not isinstance(values, _Variables):
                return None
            variables.append((by_name[name], values.settled()))
        containers = []
        for request in decision.containers:
            values = request.variables.cel_values if isinstance(request.variables, JsonView) else request.variables
            settled = values.settled() if isinstance(values, _Variables) else values
            slim = request.without_variables()
            slim.__dict__["variables"] = JsonView(settled)
            containers.append(slim)
        stored = decision.without_variables()
        stored.__dict__.update(claim=None, containers=tuple(containers))
        return DecisionEntry(stored, tuple(variables))

    def _checked(self, decision: Decision, namespace: Mapping[str, Any] | None) -> Decision:
        """`decision` with its claim checked against device shapes (`with_claim_check`), as its policy's
        onUnsatisfiable says; a joined claim (`multi-gpu,whole-gpu`) follows the first of its policies found."""
        if self.claim_check is None or decision.claim is None:
            return decision
        names = decision.policy.split(",") if decision.policy else []
        action = next((p.on_unsatisfiable for name in names for p in self.policies if p.name == name), "Deny")
        return self.claim_check.apply(decision, action, namespace)

    def _apply(
        self,
        policy: CompiledPolicy,
        mode: str,
        base: dict[str, Any],
        pod: Mapping[str, Any],
        facts: PodFacts,
        token: int | None,
        state: _Run,
        pod_memo: PodMemo | None = None,
    ) -> None:
        activation = dict(base)

        def test(expr: CompiledExpr) -> bool:
            if pod_memo is None:
                return check(expr, activation)
            result: bool = pod_memo.value(policy, expr, lambda: check(expr, activation), activation.get("variables"))
            return result

        activation["params"] = policy.params
        plan = self._memo.plan(policy)
        conditions = policy.match_conditions
        if plan.fact_conditions and token is not None:
            leading = conditions[: plan.fact_conditions]
            if not self._memo.matched(policy, token, lambda: all(check(c, activation) for _n, c in leading)):
                if self.all_variables:  # explain names the condition that was false
                    name, condition = next(((n, c) for n, c in leading if not check(c, activation)), leading[-1])
                    state.unmatched[policy.name] = (name, condition.source)
                return
            conditions = conditions[plan.fact_conditions :]
        shadowing = policy.claim is not None and state.chosen is not None
        key = None if pod_memo is None else pod_memo.outcome_key(policy, mode, shadowing)
        outcome = None if key is None or pod_memo is None else pod_memo.outcome(key)
        if outcome is not None and pod_memo is not None:
            values = self._replay(policy, activation, state, outcome, pod_memo)
        else:
            budget: cel.EvaluationBudget | None = base.get(_cel.BUDGET_KEY)
            before = (budget.left, budget.held) if budget is not None else (0, 0)
            marks = (len(state.violations), len(state.warnings), len(state.audit))
            values, failed_validation, shadowed = self._pod_level(
                policy, mode, activation, conditions, shadowing, state, test, pod_memo
            )
            if key is not None and pod_memo is not None:
                charges = (before[0] - budget.left, budget.held - before[1]) if budget is not None else (0, 0)
                outcome = Outcome(
                    matched=values is not None,
                    shadowed=shadowed,
                    values=values.weighed_items() if values is not None else (),
                    violations=tuple(state.violations[marks[0] :]),
                    warnings=tuple(state.warnings[marks[1] :]),
                    audit=tuple(state.audit[marks[2] :]),
                    failed_validation=failed_validation,
                    charges=charges,
                )
                pod_memo.store_outcome(key, outcome)
        if values is None:
            return
        if policy.claim is not None:
            state.chosen, state.chosen_mode = policy, mode
            failed = outcome.failed_validation if outcome is not None else failed_validation
            if facts.legacy_containers and not failed:
                self._claim(policy, activation, pod, facts, state, pod_memo, key)

    def _pod_level(
        self,
        policy: CompiledPolicy,
        mode: str,
        activation: dict[str, Any],
        conditions: Sequence[tuple[str, CompiledExpr]],
        shadowing: bool,
        state: _Run,
        test: Callable[[CompiledExpr], bool],
        pod_memo: PodMemo | None,
    ) -> tuple[_Variables | None, bool, bool]:
        """The policy's remaining matchConditions, variables, validations and warnings, into `state`: (its variables,
        None when it did not match or a claim policy already chose; whether a validation failed; whether it was
        shadowed by that claim policy)."""
        for name, condition in conditions:
            if not test(condition):
                if self.all_variables:
                    state.unmatched[policy.name] = (name, condition.source)
                return None, False, False
        if shadowing:
            state.shadowed.append(policy.name)
            return None, False, True
        state.matched.append(policy.name)
        values = _Variables(policy.variables, activation, memo=None if pod_memo is None else (pod_memo, policy))
        activation["variables"] = values
        if self.all_variables:
            values.force()
        state.variables[policy.name] = JsonView(values)
        failed_validation = False
        for rule in policy.validations:
            if not test(rule.expression):
                failed_validation = True
                message = _message(rule, activation, pod_memo, policy)
                state.violate(policy, mode, message, rule.reason, rule.expression.source, policy.where)
        for rule in policy.warnings:
            if not test(rule.expression):
                state.warnings.append(_message(rule, activation, pod_memo, policy))
        return values, failed_validation, False

    def _replay(
        self, policy: CompiledPolicy, activation: dict[str, Any], state: _Run, outcome: Outcome, pod_memo: PodMemo
    ) -> _Variables | None:
        """Apply a memoized `Outcome` to `state` as `_pod_level` would have; its variables, None when unmatched."""
        if not outcome.matched:
            if outcome.shadowed:
                state.shadowed.append(policy.name)
            return None
        state.matched.append(policy.name)
        values = _Variables(policy.variables, activation, memo=(pod_memo, policy))
        values.restore(outcome.values)
        activation["variables"] = values
        state.variables[policy.name] = JsonView(values)
        state.violations.extend(outcome.violations)
        state.warnings.extend(outcome.warnings)
        state.audit.extend(outcome.audit)
        return values

    def _claim(
        self,
        policy: CompiledPolicy,
        activation: dict[str, Any],
        pod: Mapping[str, Any],
        facts: PodFacts,
        state: _Run,
        pod_memo: PodMemo | None = None,
        outcome_key: Any = None,
    ) -> None:
        assert policy.claim is not None
        requests: list[dict[str, Any]] = []
        constraints: list[dict[str, Any]] = []
        config: list[dict[str, Any]] = []
        plan = self._memo.plan(policy)
        parent: _Variables = activation["variables"]
        weight = 0  # `weigh` of the requests, constraints and config (each built request's, weighed once)
        prepared: list[tuple[ContainerFacts, dict[str, Any], Any, ClaimEntry | None]] = []
        for container in facts.claim_containers:
            local = dict(activation)
            local["container"] = pod["spec"][container.kind][container.index]
            local["legacy"] = dict(container.legacy)
            memo_key = None if pod_memo is None else pod_memo.claim_key(policy, plan, container, local)
            hit = pod_memo.claim(memo_key) if pod_memo is not None and memo_key is not None else None
            prepared.append((container, local, memo_key, hit))
        # each container's claim memo key, when all have one
        keys = [p[2] for p in prepared] if pod_memo is not None and all(p[2] is not None for p in prepared) else None
        # When every request comes from the claim memo, what building them reads of the pod-level variables is a
        # function of the policy's outcome key and the claim keys: read it at once (`PodMemo.restore_stage`).
        stage_key = None
        if keys is not None and outcome_key is not None and all(p[3] is not None for p in prepared):
            stage_key = (outcome_key, tuple(keys))
        staged = stage_key is not None and pod_memo is not None and pod_memo.restore_stage(stage_key, parent)
        # The whole claim, when these keys built it before as a plain JSON tree: one copy of it, not one per request.
        known = self._memo.claim_facts(stage_key[1]) if stage_key is not None else None
        whole = pickle.loads(known.blob) if known is not None and known.blob is not None else None
        plain = True  # whether every request is a plain JSON tree (its entry has a pickle)
        budget: cel.EvaluationBudget | None = activation.get(_cel.BUDGET_KEY)
        before = (len(parent), budget.left if budget is not None else 0, budget.held if budget is not None else 0)
        for container, local, memo_key, found in prepared:
            check_deadline()
            hit = found
            if hit is None and pod_memo is not None and memo_key is not None:
                hit = pod_memo.claim(memo_key)  # stored meanwhile (by an earlier container of the same name)
            if hit is not None:
                own = hit.variables
                for name in hit.names:  # the pod-level variables building it read, as `PodMemo.value` does
                    parent[name]
                weight += hit.weight
                plain = plain and hit.blob is not None
                if whole is None:
                    built = hit.copy()
            else:
                own = _Variables(policy.claim.variables, local, parent=parent)
                local["variables"] = own
                if self.all_variables:
                    own.force()
                log = parent.start_recording()
                try:
                    built = build_request(policy.claim.tree, local, container.name, policy)
                finally:
                    parent.stop_recording(log)
                built_weight = weigh(built.request) + weigh(built.constraints) + weigh(built.config)
                weight += built_weight
                if pod_memo is not None and memo_key is not None:
                    entry = ClaimEntry.of(built, own.settled(), tuple(dict.fromkeys(log)), built_weight)
                    pod_memo.store_claim(memo_key, entry)
                    built = entry.copy()  # the memo's objects are shared: hand out copies
                    plain = plain and entry.blob is not None
                else:
                    plain = False
            if whole is None:
                requests.append(built.request)
                constraints.extend(built.constraints)
                config.extend(built.config)
            state.containers.append(container_request(container, container.name, policy.name, own))
        # An init container shares the request of the container it precedes (`PodFacts.claim_containers`); one that
        # shares several requests or adds one of its own is joined to the pod's claim by `merge_decisions`.
        built_names = {c.name for c in facts.claim_containers}
        for container in facts.legacy_containers:
            if container.reuses and container.reuses in built_names and not container.also:
                state.containers.append(container_request(container, container.reuses, policy.name))
        state.containers.sort(key=pod_order)
        if stage_key is not None and not staged and pod_memo is not None:
            added = parent.weighed_items()[before[0] :]
            charges = (before[1] - budget.left, budget.held - before[2]) if budget is not None else (0, 0)
            pod_memo.store_stage(stage_key, added, charges)
        if whole is not None:
            claim = whole
            devices = whole["devices"]
            requests = devices["requests"]
            constraints, config = devices.get("constraints", []), devices.get("config", [])
        else:
            devices = {"requests": requests}
            if constraints:
                devices["constraints"] = constraints
            if config:
                devices["config"] = config
            claim = {"devices": devices}
        state.claim = claim
        # the two dicts, their keys and the lists, as `weigh(claim)` charges them
        state.claim_weight = 600 + 8 * (len(requests) + len(constraints) + len(config)) + weight
        # The claim is a function of its containers' claim memo keys (each entry's request, in order): its
        # validation, its digest and its pickle are computed once per such claim.
        if keys:
            if known is None:
                known = self._memo.claim_facts(tuple(keys))
            if known is None:
                blob = pickle.dumps(claim, pickle.HIGHEST_PROTOCOL) if plain else None
                known = ClaimFacts(tuple(validate_claim(claim)), claim_digest(claim), blob)
                self._memo.store_claim_facts(tuple(keys), known)
            problems = known.problems
            state.claim_digest, state.claim_blob = known.digest, known.blob
        else:
            problems = tuple(validate_claim(claim))
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
            # Skipped, as if it had not matched: a lower-priority claim policy (the whole-gpu fallback) decides the
            # claim instead of the pod going through untranslated.
            if state.chosen is policy:
                state.chosen, state.chosen_mode = None, None
            state.warnings.append(
                f"GPUClaimPolicy '{policy.name}' could not be evaluated (failurePolicy Ignore): {error}"
            )
            return
        line = f"{error.file}:{error.line}" if error.line is not None else error.file
        state.violate(policy, mode, str(error), _INTERNAL, error.expression, line)

    def _decide(self, state: _Run, ns_name: str, sizing: Mapping[str, str], sizing_source: str) -> Decision:
        denials = [v for v in state.violations if v.mode == "enforce"]
        allowed = not denials
        message = "; ".join(_verdict(v) for v in denials)
        chosen = state.chosen
        warnings, audit, containers = tuple(state.warnings), tuple(state.audit), tuple(state.containers)
        held = _held_bytes(message, warnings, audit, state.claim, state.claim_weight, state.variables, containers)
        return Decision(
            allowed=allowed,
            message=message,
            reason=denials[0].reason if denials else "",
            policy=chosen.name if chosen is not None else None,
            mode=state.chosen_mode,
            namespace=ns_name,
            matched=tuple(state.matched),
            shadowed=tuple(state.shadowed),
            unmatched=state.unmatched,
            variables=state.variables,
            claim=state.claim,
            containers=containers,
            violations=tuple(state.violations),
            warnings=warnings,
            audit=audit,
            sizing=sizing,
            sizing_source=sizing_source,
            claim_digest=state.claim_digest if state.claim is not None else "",
            claim_blob=state.claim_blob if state.claim is not None else None,
            held_bytes=held,
        )
