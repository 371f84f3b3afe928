"""The policy engine's memo tables: what of one pod's evaluation can be reused for the next, keyed by exactly
the inputs it can read, so that a decision never depends on what is in them.

`PolicyMemo` belongs to one `PolicySet`: each policy's `Plan` (what of it is memoizable, decided once from its
expressions' sources), the tables, and `for_pod`, the per-evaluation view that fingerprints the pod's inputs.
Every table is a `MemoTable`, the one place where their size is bounded (entries and bytes).
"""

from __future__ import annotations

import itertools
import pickle
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from dra.cel import EvaluationBudget

from . import jsontext
from ._cel import BUDGET_KEY
from ._claim import BuiltRequest, claim_expressions
from ._deps import Read, closure, path_closure, path_closure_levels, reads
from .decision import Decision, Violation
from .facts import VRAM_ANNOTATION, ContainerFacts, PodFacts, extended_resource_pairs
from .loader import CompiledExpr, CompiledPolicy

__all__ = [
    "MAX_BYTES",
    "Analysis",
    "MAX_ENTRIES",
    "ClaimEntry",
    "ClaimFacts",
    "DecisionEntry",
    "MemoTable",
    "Outcome",
    "Plan",
    "PodMemo",
    "PolicyMemo",
    "ReadRecorder",
    "WholePlan",
    "analysis",
]

# Tables are dropped whole when they reach this many entries or this many bytes of keys and values (a pod's
# fingerprints hold the JSON text of what its expressions read: a 1 MB annotation is a 1 MB key).
MAX_ENTRIES = 4096
MAX_BYTES = 8 * 2**20
_MAX_WEIGH_DEPTH = 8  # deeper structure is charged a flat amount: weighing must stay cheaper than memoizing
# Inputs whose values the facts token (gpu), the container's legacy counts and the policy itself (params) pin down.
FACT_ROOTS = frozenset({"gpu", "params"})
_CLAIM_ROOTS = frozenset({"gpu", "params", "legacy"})
_KEYABLE = frozenset(
    {"gpu", "params", "legacy", "container", "object", "oldObject", "request", "namespaceObject", "pod"}
)
# `pod` (the pod facts gpudra adds, such as schedulerName) is keyed by its JSON as the admission inputs are.
ROOT_INPUTS = frozenset({"object", "oldObject", "request", "namespaceObject", "pod"})
_UNKNOWN = object()

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def weigh(value: Any, depth: int = 0) -> int:
    """Roughly the bytes `value` holds: strings by length, containers by their members (a bound, not a measure)."""
    kind = type(value)
    if kind is str or kind is bytes or isinstance(value, (str, bytes)):
        return 49 + len(value)
    if depth >= _MAX_WEIGH_DEPTH:
        return 64
    # loops rather than sum() over generators: this runs on every memoized value of every review
    if kind is dict or isinstance(value, dict):
        total = 64
        deeper = depth + 1
        for key, item in value.items():
            total += 49 + len(key) if type(key) is str else weigh(key, deeper)
            kind_item = type(item)
            if kind_item is str:
                total += 49 + len(item)
            elif deeper < _MAX_WEIGH_DEPTH and (
                kind_item is int or kind_item is float or kind_item is bool or item is None
            ):
                total += 32
            else:
                total += weigh(item, deeper)
        return total
    if kind is list or kind is tuple or isinstance(value, (tuple, list)):
        total = 56 + 8 * len(value)
        deeper = depth + 1
        for item in value:
            total += 49 + len(item) if type(item) is str else weigh(item, deeper)
        return total
    return 32


class MemoTable(Generic[K, V]):
    """A dict that is cleared whole when it reaches `max_entries` entries or `max_bytes` (`weigh` of each key and
    value, charged when stored)."""

    __slots__ = ("_data", "max_entries", "max_bytes", "bytes")

    def __init__(self, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> None:
        self._data: dict[K, V] = {}
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.bytes = 0

    def get(self, key: K) -> V | None:
        return self._data.get(key)

    def put(self, key: K, value: V, weight: int | None = None) -> V:
        """Store `value`, charged `weight` (default: `weigh` of the key and the value; a caller that has weighed
        the value already passes the sum)."""
        if weight is None:
            weight = weigh(key) + weigh(value)
        if weight > self.max_bytes:  # never kept: it would evict everything else and still not fit
            return value
        if len(self._data) >= self.max_entries or self.bytes + weight > self.max_bytes:
            self._data.clear()
            self.bytes = 0
        self._data[key] = value
        self.bytes += weight
        return value

    def __len__(self) -> int:
        return len(self._data)


class ReadRecorder(Protocol):
    """The `variables` map as the memo sees it: reading a name, and recording the names read meanwhile."""

    def __getitem__(self, name: str) -> Any: ...

    def start_recording(self) -> list[str]: ...

    def stop_recording(self, log: list[str]) -> None: ...


@dataclass(frozen=True)
class Plan:
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
    def of(cls, policy: CompiledPolicy) -> Plan:
        count = 0
        for _name, condition in policy.match_conditions:
            roots, names = reads(condition.source)
            if names or not roots <= FACT_ROOTS:
                break
            count += 1
        from_facts = False
        if policy.claim is not None:
            claim_vars = {name: expr.source for name, expr in policy.claim.variables}
            pod_vars = {name: expr.source for name, expr in policy.variables}
            sources = [leaf.source for leaf in claim_expressions(policy.claim.tree)]
            found = closure(sources, [claim_vars, pod_vars])
            from_facts = found is not None and found <= _CLAIM_ROOTS
            claim_paths = path_closure_levels(sources, [claim_vars, pod_vars])
            if claim_paths is not None and all(root in _KEYABLE for root, _p in claim_paths):
                return cls(count, from_facts, tuple(sorted(claim_paths)))
        return cls(count, from_facts)


def _pod_level_exprs(policy: CompiledPolicy) -> list[CompiledExpr]:
    """The policy's pod-level expressions: conditions, variables, validations, warnings and their messages."""
    exprs = [c for _n, c in policy.match_conditions] + [v for _n, v in policy.variables]
    for rule in (*policy.validations, *policy.warnings):
        exprs.append(rule.expression)
        if rule.message_expression is not None:
            exprs.append(rule.message_expression)
    return exprs


def _pod_level_reads(policy: CompiledPolicy) -> tuple[tuple[CompiledExpr, tuple[Read, ...]], ...]:
    """Pod-level expressions → the (root, path) reads their value depends on, variables followed; an expression
    whose reads are not statically known is left out (never memoized)."""
    variables = {name: expr.source for name, expr in policy.variables}
    out: list[tuple[CompiledExpr, tuple[Read, ...]]] = []
    for expr in _pod_level_exprs(policy):
        found = path_closure([expr.source], variables)
        # Claim-scope roots cannot appear at pod level (compile rejects them there); be safe regardless.
        if found is not None and all(root in ROOT_INPUTS or root in FACT_ROOTS for root, _p in found):
            # `gpu` reads first: `PodMemo.value` keys them all by the facts token.
            out.append((expr, tuple(sorted(found, key=lambda r: (r[0] != "gpu", r)))))
    return tuple(out)


def _policy_reads(
    policy: CompiledPolicy, reads_: Sequence[tuple[CompiledExpr, tuple[Read, ...]]]
) -> tuple[Read, ...] | None:
    """Every (root, path) the policy's pod-level expressions read, when each one's reads are statically known
    (else None: its outcome is never memoized whole). `reads_` is `_pod_level_reads(policy)`, which leaves out
    exactly the expressions whose reads are not known."""
    if len(reads_) != len(_pod_level_exprs(policy)):
        return None
    return tuple(sorted({read for _expr, found in reads_ for read in found if read[0] in ROOT_INPUTS}))


@dataclass(frozen=True)
class Analysis:
    """What `PolicyMemo` must know of one policy, worked out from its expressions' sources alone: its `Plan`, each
    pod-level expression's reads (by the expression object) and the whole policy's root-input reads (None: its
    outcome is never memoized whole). Kept on the policy (`CompiledPolicy.memo_analysis`), and so with it in
    `policyengine.verified`'s store: a short CLI call neither re-derives it nor loads the parse trees it needs."""

    plan: Plan
    reads: tuple[tuple[CompiledExpr, tuple[Read, ...]], ...]
    policy_reads: tuple[Read, ...] | None


def analysis(policy: CompiledPolicy) -> Analysis:
    """The policy's `Analysis`, worked out on first ask (two threads may both: the same value either way)."""
    known = policy.memo_analysis
    if isinstance(known, Analysis):
        return known
    reads_ = _pod_level_reads(policy)
    found = Analysis(Plan.of(policy), reads_, _policy_reads(policy, reads_))
    object.__setattr__(policy, "memo_analysis", found)
    return found


def fingerprint(value: Any, path: tuple[str, ...]) -> Any:
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
        return (depth, jsontext.dumps(value, allow_nan=False))
    except (TypeError, ValueError):
        return None


def json_copy(data: Any) -> Any:
    """A deep copy of JSON data (dicts and lists; leaves are immutable)."""
    if type(data) is dict:
        return {k: json_copy(v) for k, v in data.items()}
    if type(data) is list:
        return [json_copy(v) for v in data]
    return data


def _plain_tree(data: Any) -> bool:
    """Whether `data` is JSON data (dicts with str keys, lists, str, int, float, bool, None) in which no dict or list
    appears twice: then a pickle of it loads as exactly what `json_copy` makes."""
    seen: set[int] = set()
    pending = [data]
    while pending:
        value = pending.pop()
        kind = type(value)
        if kind is dict or kind is list:
            if id(value) in seen:
                return False
            seen.add(id(value))
            if kind is dict:
                if any(type(k) is not str for k in value):
                    return False
                pending.extend(value.values())
            else:
                pending.extend(value)
        elif not (kind is str or kind is int or kind is float or kind is bool or value is None):
            return False
    return True


@dataclass(frozen=True, slots=True)
class ClaimEntry:
    """A memoized container request: the built request, the container's claim variables, and the pod-level
    variable names building it read (read again on a hit, so the decision lists the same variables)."""

    built: BuiltRequest
    variables: Any
    names: tuple[str, ...]
    # `weigh` of the request, constraints and config (what a decision's claim holds of this entry's copy)
    weight: int = 0
    # The pickle of (request, constraints, config) when they are a plain JSON tree (`_plain_tree`): loading it is
    # a deep copy in C, several times faster than `json_copy`, and the same objects
    blob: bytes | None = None

    @classmethod
    def of(cls, built: BuiltRequest, variables: Any, names: tuple[str, ...], weight: int) -> ClaimEntry:
        parts = (built.request, built.constraints, built.config)
        blob = pickle.dumps(parts, pickle.HIGHEST_PROTOCOL) if _plain_tree(list(parts)) else None
        return cls(built, variables, names, weight, blob)

    def copy(self) -> BuiltRequest:
        """The request as a fresh object: the memo's own is shared between pods."""
        if self.blob is not None:
            request, constraints, config = pickle.loads(self.blob)
            return BuiltRequest(request, constraints, config)
        built = self.built
        return BuiltRequest(json_copy(built.request), json_copy(built.constraints), json_copy(built.config))


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the pod-level part of one policy's evaluation (its matchConditions after the leading fact conditions,
    variables, validations and warnings, before the claim) added to a decision; a pure function of the policy, the
    mode, whether a claim policy already chose, the facts token and the inputs at its expressions' reads.

    `values`: (name, CEL value, weight) of the variables read, in the order read; `violations`, `warnings`,
    `audit`: what it appended to each; `charges`: the (cost, size) it charged the evaluation's budget.
    """

    matched: bool
    shadowed: bool = False
    values: tuple[tuple[str, Any, int], ...] = ()
    violations: tuple[Violation, ...] = ()
    warnings: tuple[str, ...] = ()
    audit: tuple[str, ...] = ()
    failed_validation: bool = False
    charges: tuple[int, int] = (0, 0)


@dataclass(frozen=True, slots=True)
class ClaimFacts:
    """Computed once per claim (`PolicyMemo.claim_facts`): Kubernetes' validation problems, the digest of its
    canonical JSON, and its pickle when it is a plain JSON tree (loading it is a fresh copy of the claim)."""

    problems: tuple[str, ...]
    digest: str
    blob: bytes | None


def _covering(found: set[Read]) -> tuple[Read, ...]:
    """`found` less each read whose path extends another read of the same root: equal JSON text at the shorter path
    means equal values, so equal fingerprints, at every path below it."""
    return tuple(
        sorted(
            (root, path)
            for root, path in found
            if not any(r == root and len(p) < len(path) and path[: len(p)] == p for r, p in found)
        )
    )


@dataclass(frozen=True, slots=True)
class WholePlan:
    """What a whole evaluation (every policy of one `PolicySet._evaluate_facts` call) reads beyond the facts token,
    the namespace's mode and name: when each of its policies is memoized whole (`Analysis.policy_reads`) and so is
    each claim it can build (`Plan.claim_from_facts` or `Plan.claim_reads`), the decision is a function of these.

    `roots`: the root-input reads of all of them (a read below another one left out, `_covering`); `container`:
    the paths of the claim containers' own objects the claims read (`container`; `legacy` is in the facts)."""

    roots: tuple[Read, ...]
    container: tuple[tuple[str, ...], ...]

    @classmethod
    def of(cls, policies: Sequence[CompiledPolicy], claims: bool | None) -> WholePlan | None:
        roots: set[Read] = set()
        container: set[Read] = set()
        for policy in policies:
            if claims is not None and (policy.claim is not None) != claims:
                continue
            found = analysis(policy)
            if found.policy_reads is None:
                return None
            roots.update(found.policy_reads)
            if policy.claim is None or found.plan.claim_from_facts:
                continue
            if found.plan.claim_reads is None:
                return None
            for root, path in found.plan.claim_reads:
                if root in ROOT_INPUTS:
                    roots.add((root, path))
                elif root == "container":
                    container.add((root, path))
                elif root not in _CLAIM_ROOTS:  # pragma: no cover - `Plan.of` keeps only keyable roots
                    return None
        return cls(_covering(roots), tuple(path for _root, path in _covering(container)))


@dataclass(frozen=True, slots=True)
class DecisionEntry:
    """A memoized whole evaluation (`PolicyMemo.decision`): the decision as `PolicySet._evaluate_facts` made it,
    without what a caller may change or what holds the review's objects: no claim (it is loaded afresh from
    `Decision.claim_blob`), no pod-level variables (`variables` holds, per matched policy in order, the values read
    with their weights, settled (`engine._Variables.settled`), restored into a fresh map) and each container's
    variables settled."""

    decision: Decision
    variables: tuple[tuple[CompiledPolicy, Any], ...]


class PolicyMemo:
    """The memo tables of one `PolicySet`, with each policy's `Plan` and its pod-level expressions' reads.

    The pod's GPU facts are keyed by a token, a small int handed out once per distinct `PodFacts` (equal facts, equal
    token) and never reused, so keys stay cheap to hash however many containers a pod has.
    """

    __slots__ = (
        "_plans",
        "_reads",
        "_policy_reads",
        "_tokens",
        "_gpu",
        "_match",
        "_claim",
        "_value",
        "_outcome",
        "_claim_facts",
        "_stage",
        "_policies",
        "_whole",
        "_decision",
        "_facts",
    )

    def __init__(self, policies: Sequence[CompiledPolicy]) -> None:
        self._plans: dict[int, Plan] = {}
        self._reads: dict[int, tuple[Read, ...]] = {}
        # policy → the root-input reads of all its pod-level expressions (absent: not memoized whole)
        self._policy_reads: dict[int, tuple[Read, ...]] = {}
        for policy in policies:
            found = analysis(policy)
            self._plans[id(policy)] = found.plan
            self._reads.update((id(expr), reads_) for expr, reads_ in found.reads)
            if found.policy_reads is not None:
                self._policy_reads[id(policy)] = found.policy_reads
        self._tokens = itertools.count()
        # GPU facts → (token, `gpu` value); (policy, token) → leading fact conditions' outcome;
        # claim key (see `PodMemo.claim_key`) → entry; (policy, expression, fingerprints) → (value, names read).
        self._gpu: MemoTable[PodFacts, tuple[int, dict[str, Any]]] = MemoTable()
        self._match: MemoTable[tuple[int, int], bool] = MemoTable()
        self._claim: MemoTable[Any, ClaimEntry] = MemoTable()
        # value, the variables it read, its (cost, size) charges, and `weigh` of the value
        self._value: MemoTable[Any, tuple[Any, tuple[str, ...], tuple[int, int], int]] = MemoTable()
        # (policy, mode, shadowing, token, fingerprints) → the policy's pod-level `Outcome` (see `PodMemo.outcome_key`)
        self._outcome: MemoTable[Any, Outcome] = MemoTable()
        # the containers' claim keys, in order → the claim's validation problems, digest and pickle (`ClaimFacts`)
        self._claim_facts: MemoTable[tuple[Any, ...], ClaimFacts] = MemoTable()
        # (outcome key, the containers' claim keys) → the pod-level variables building the claim added, in order,
        # with their weights, and what reading them charged (see `PodMemo.restore_stage`)
        self._stage: MemoTable[Any, tuple[tuple[tuple[str, Any, int], ...], tuple[int, int]]] = MemoTable()
        self._policies = tuple(policies)
        # `claims` (see `PolicySet._evaluate_facts`) → its `WholePlan` (None: not memoized whole), made on first ask
        self._whole: dict[bool | None, WholePlan | None] = {}
        # (claims, namespace mode and name, facts token, fingerprints of `WholePlan`'s reads) → `DecisionEntry`
        self._decision: MemoTable[Any, DecisionEntry] = MemoTable()
        # (JSON text of what `pod_facts` reads of the pod, the other facts) → the pod's facts (see `pod_facts`)
        self._facts: MemoTable[Any, PodFacts] = MemoTable()

    def plan(self, policy: CompiledPolicy) -> Plan:
        return self._plans.get(id(policy)) or analysis(policy).plan

    def gpu(self, facts: PodFacts) -> tuple[int, dict[str, Any]]:
        """(the facts token, the `gpu` CEL value) of a pod's facts, keyed by the facts themselves."""
        found = self._gpu.get(facts)
        if found is None:
            value = facts.to_cel()
            # The facts hold the strings their CEL value holds: charged as much again, for the key.
            found = self._gpu.put(facts, (next(self._tokens), value), 2 * weigh(value))
        return found

    def matched(self, policy: CompiledPolicy, token: int, compute: Callable[[], bool]) -> bool:
        """The outcome of the policy's leading fact conditions (`Plan.fact_conditions`) for these facts."""
        key = (id(policy), token)
        found = self._match.get(key)
        if found is None:
            found = self._match.put(key, compute())
        return found

    def claim_facts(self, keys: tuple[Any, ...]) -> ClaimFacts | None:
        """What is known of a whole claim by its containers' claim memo keys: the claim is their entries' requests,
        constraints and config, in order, so equal keys mean an equal claim."""
        return self._claim_facts.get(keys)

    def store_claim_facts(self, keys: tuple[Any, ...], facts: ClaimFacts) -> None:
        self._claim_facts.put(keys, facts)

    def pod_facts(
        self,
        pod: Mapping[str, Any],
        dra_devices: int,
        extended_resources: Mapping[str, str] | None,
        compute: Callable[[], PodFacts],
    ) -> PodFacts:
        """`compute()` (`facts.pod_facts` without an observed-usage lookup), or the facts of a pod equal in all it
        reads: the spec's containers, init containers, resource claims and scheduler name, and the
        `gpudra.io/vram` annotation (the namespace is read only to look observed usage up). Errors are not memoized."""
        spec = pod.get("spec")
        if type(spec) is not dict:
            return compute()
        read = [spec.get(name) for name in ("initContainers", "containers", "resourceClaims", "schedulerName")]
        try:
            text = jsontext.dumps(read, allow_nan=False)
        except (TypeError, ValueError):
            return compute()
        vram = fingerprint(pod, ("metadata", "annotations", VRAM_ANNOTATION))
        if vram is None:
            return compute()
        key = (text, vram, dra_devices, extended_resource_pairs(extended_resources))
        found = self._facts.get(key)
        if found is None:
            found = compute()
            # the facts hold about what their key's text does (names, counts, sizing reasons)
            self._facts.put(key, found, 2 * weigh(key) + 512)
        return found

    def whole_plan(self, claims: bool | None) -> WholePlan | None:
        if claims not in self._whole:
            self._whole[claims] = WholePlan.of(self._policies, claims)
        return self._whole[claims]

    def decision(self, key: Any) -> DecisionEntry | None:
        return self._decision.get(key)

    def store_decision(self, key: Any, entry: DecisionEntry) -> None:
        self._decision.put(key, entry, weigh(key) + entry.decision.held_bytes + 512)

    def for_pod(self, base: Mapping[str, Any], token: int) -> PodMemo:
        """The view for one evaluation: `base` holds the pod-level inputs (`object`, `request`, ...)."""
        return PodMemo(self, base, token)

    def sizes(self) -> dict[str, int]:
        return {
            "gpu": len(self._gpu),
            "match": len(self._match),
            "claim": len(self._claim),
            "value": len(self._value),
            "outcome": len(self._outcome),
            "claim_facts": len(self._claim_facts),
            "stage": len(self._stage),
            "decision": len(self._decision),
            "facts": len(self._facts),
        }

    def weights(self) -> dict[str, int]:
        """The bytes each table holds, as `MemoTable` charges them."""
        return {
            "gpu": self._gpu.bytes,
            "match": self._match.bytes,
            "claim": self._claim.bytes,
            "value": self._value.bytes,
            "outcome": self._outcome.bytes,
            "claim_facts": self._claim_facts.bytes,
            "stage": self._stage.bytes,
            "decision": self._decision.bytes,
            "facts": self._facts.bytes,
        }


class PodMemo:
    """Memoizes one pod's expression values and container requests by the values at the field paths they can
    read (see `_deps.paths`).

    A key is (policy, expression, the JSON text of the subtree at each path, or where the path stops being a
    mapping); `gpu` is keyed by the facts token and `params` by the policy. An input that is not JSON is never
    memoized. Failures are not memoized, so they are raised again, by the same evaluation, every time.
    """

    __slots__ = ("_memo", "_base", "_token", "_seen")

    def __init__(self, memo: PolicyMemo, base: Mapping[str, Any], token: int) -> None:
        self._memo = memo
        self._base = base
        self._token = token
        self._seen: dict[Read, Any] = {}

    def _fingerprint(self, read: Read) -> Any:
        found = self._seen.get(read, _UNKNOWN)
        if found is _UNKNOWN:
            found = self._seen[read] = fingerprint(self._base[read[0]], read[1])
        return found

    def value(
        self,
        policy: CompiledPolicy,
        expr: CompiledExpr,
        compute: Callable[[], Any],
        variables: ReadRecorder | None = None,
    ) -> Any:
        """`compute()`, or its memoized value; on a hit the variables it read are read again, in the same order,
        so that the decision lists the same variables (`Decision.variables` shows those read)."""
        return self.weighed(policy, expr, compute, variables)[0]

    def weighed(
        self,
        policy: CompiledPolicy,
        expr: CompiledExpr,
        compute: Callable[[], Any],
        variables: ReadRecorder | None = None,
    ) -> tuple[Any, int]:
        """`value`, and `weigh` of it (weighed once, when first computed)."""
        reads_ = self._memo._reads.get(id(expr))
        if reads_ is None:
            value = compute()
            return value, weigh(value)
        parts: list[Any] = [id(policy), id(expr), self._token if reads_ and reads_[0][0] == "gpu" else None]
        for read in reads_:
            if read[0] in ROOT_INPUTS:
                found_print = self._fingerprint(read)
                if found_print is None:
                    value = compute()
                    return value, weigh(value)
                parts.append(found_print)
        key = tuple(parts)
        table = self._memo._value
        budget: EvaluationBudget | None = self._base.get(BUDGET_KEY)
        found = table.get(key)
        # The same decision with or without the memo: a reused value is charged what computing it cost, and one the
        # budget cannot pay for is computed, to fail as it would have.
        if found is not None and (budget is None or budget.fits(found[2])):
            value, names, charges, weight = found
            if variables is not None:
                for name in names:
                    variables[name]
            if budget is not None:
                budget.replay(charges, expr.source)
            return value, weight
        log = variables.start_recording() if variables is not None else []
        try:
            value = compute()
        finally:
            if variables is not None:
                variables.stop_recording(log)
        names = tuple(dict.fromkeys(log))
        weight = weigh(value)
        charges = budget.last if budget is not None else (0, 0)
        # the key, the value, and the entry's tuple with its names and charges
        table.put(key, (value, names, charges, weight), weigh(key) + weight + weigh(names) + 216)
        return value, weight

    def decision_key(
        self, claims: bool | None, ns_mode: str | None, ns_name: str, pod: Mapping[str, Any], facts: PodFacts
    ) -> Any:
        """The memo key of the whole evaluation (`WholePlan`), or None when it cannot be memoized whole."""
        plan = self._memo.whole_plan(claims)
        if plan is None:
            return None
        parts: list[Any] = [claims, ns_mode, ns_name, self._token]
        for read in plan.roots:
            found_print = self._fingerprint(read)
            if found_print is None:
                return None
            parts.append(found_print)
        if plan.container:
            spec = pod["spec"]
            for container in facts.claim_containers:
                own = spec[container.kind][container.index]
                for path in plan.container:
                    found_print = fingerprint(own, path)
                    if found_print is None:
                        return None
                    parts.append(found_print)
        return tuple(parts)

    def outcome_key(self, policy: CompiledPolicy, mode: str, shadowing: bool) -> Any:
        """The memo key of the policy's pod-level `Outcome`, or None when it cannot be memoized whole (an
        expression's reads are not statically known, or an input it reads is not JSON)."""
        reads_ = self._memo._policy_reads.get(id(policy))
        if reads_ is None:
            return None
        parts: list[Any] = [id(policy), mode, shadowing, self._token]
        for read in reads_:
            found_print = self._fingerprint(read)
            if found_print is None:
                return None
            parts.append(found_print)
        return tuple(parts)

    def outcome(self, key: Any) -> Outcome | None:
        """The memoized outcome, its charges replayed on the evaluation's budget; None when there is none or the
        budget cannot pay for it (then it is computed, to fail as it would have: every charge is non-negative,
        so a total that fits means each step fitted)."""
        found = self._memo._outcome.get(key)
        if found is None:
            return None
        budget: EvaluationBudget | None = self._base.get(BUDGET_KEY)
        if budget is not None:
            if not budget.fits(found.charges):
                return None
            budget.replay(found.charges, "")
        return found

    def store_outcome(self, key: Any, outcome: Outcome) -> None:
        weight = weigh(key) + 256
        weight += sum(320 + len(v.message) + len(v.where) + len(v.expression) for v in outcome.violations)
        weight += sum(49 + len(name) + value_weight for name, _v, value_weight in outcome.values)
        weight += weigh(outcome.warnings) + weigh(outcome.audit)
        self._memo._outcome.put(key, outcome, weight)

    def claim_key(self, policy: CompiledPolicy, plan: Plan, container: ContainerFacts, local: Mapping[str, Any]) -> Any:
        """The memo key of one container's claim request, or None when it cannot be memoized (an input is not
        JSON, or the claim reads what no key covers)."""
        if plan.claim_from_facts:
            return (id(policy), self._token, container.name, tuple(container.legacy.items()))
        if plan.claim_reads is None:
            return None
        parts: list[Any] = [id(policy), self._token]
        for root, path in plan.claim_reads:
            if root in ROOT_INPUTS:
                found_print = self._fingerprint((root, path))
            elif root in ("container", "legacy"):
                found_print = fingerprint(local[root], path)
            else:
                continue  # gpu: the facts token; params: the policy
            if found_print is None:
                return None
            parts.append(found_print)
        parts.append(container.name)
        return tuple(parts)

    def restore_stage(self, key: Any, variables: Any) -> bool:
        """Set the pod-level variables that building a claim (every request from the claim memo) read, as reading
        them one by one would (same values, order, weights, charges); False when not known or the budget cannot
        pay for them (then they are read one by one, to fail as they would)."""
        found = self._memo._stage.get(key)
        if found is None:
            return False
        added, charges = found
        budget: EvaluationBudget | None = self._base.get(BUDGET_KEY)
        if budget is not None:
            if not budget.fits(charges):
                return False
            budget.replay(charges, "")
        variables.restore(added)
        return True

    def store_stage(self, key: Any, added: tuple[tuple[str, Any, int], ...], charges: tuple[int, int]) -> None:
        weight = weigh(key) + 200 + sum(49 + len(name) + value_weight for name, _v, value_weight in added)
        self._memo._stage.put(key, (added, charges), weight)

    def claim(self, key: Any) -> ClaimEntry | None:
        return self._memo._claim.get(key)

    def store_claim(self, key: Any, entry: ClaimEntry) -> None:
        self._memo._claim.put(key, entry)
