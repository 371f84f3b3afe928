"""The `gpudra` strategy: pods go through the policy engine, and `dra.allocator` places the claims it builds.

Each distinct pod shape is evaluated once by `policyengine` (the shipped policies, or `--policies DIR`),
which returns the DRA claim the webhook would create; a pod they leave alone keeps its legacy request as the
KEP-5004 claim for `nvidia.com/gpu`, and one they deny is never placed (counted). kube-scheduler places the pods
(`KubeScheduled`): the allocator (`upstream`, what a stock cluster does, or the `scored` what-if) is the
DynamicResources filter on every node class that passes the others, and the subrequest it picks for a
`firstAvailable` request is that plugin's score. Its devices (MIG partitions created on the fly on dynamic-MIG
GPUs, memory shares of GPUs that allow multiple allocations, whole GPUs) become the pod's parts.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from dra.allocator import Claim, Mode, prepare_claim
from dra.sizing import SizingLookup

from ..frag import TypicalPod, fgd_score, frag_amount, typical_pods
from ..scheduling import Devices, Placer, Profile, claim_devices, node_slices
from ..state import PLAIN, STATIC, ClusterState, Part
from ..workload import SimPod
from .base import NODE_SCORES, Demand, Option
from .kube import KubeScheduled

if TYPE_CHECKING:
    from policyengine import ClaimCheck

    from .base import Strategy
    from .settings import RunSettings

_MISSING = object()
OBSERVED_RUN = "gpudra+observed"  # the gpudra strategy with --sizing observed:..., beside plain gpudra

__all__ = ["OBSERVED_RUN", "ClaimDemand", "PolicyClaims", "legacy_claim"]


@dataclass(frozen=True, slots=True)
class ClaimDemand(Demand):
    """A GPU pod's demand: its claim (canonical JSON) and the compute a memory share of one GPU holds."""

    claim: str = ""
    share_milli: int = 1000


def legacy_claim(gpus: int) -> dict[str, Any]:
    """The claim kube-scheduler builds for a legacy `nvidia.com/gpu: N` request (KEP-5004 extended resource)."""
    return {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": gpus}}]}}


def _has_room(gpu: tuple[Any, ...]) -> bool:
    """Whether a GPU (its `GpuState.sig`) can still give any device: free memory, a free slot or MIG slice."""
    if gpu[0] == PLAIN:
        return bool(gpu[2] > 0)
    if gpu[0] == STATIC:
        return 0 in gpu[1]
    return not gpu[1] and gpu[2] != 0xFF and gpu[3] < 7


def _device_shape(groups: tuple[tuple[tuple[Any, ...], ...], ...], compute: bool) -> tuple[Any, ...]:
    """A class's GPU states as the allocator sees them: free memory (and compute when it bounds shares), sorted
    within NVLink groups."""

    def plain(g: tuple[Any, ...]) -> tuple[Any, ...]:
        return (g[0], g[2], g[1]) if compute else (g[0], g[2])

    return tuple(sorted(tuple(sorted(plain(g) if g[0] == PLAIN else g for g in group)) for group in groups))


class PolicyClaims(KubeScheduled):
    name = "gpudra"

    def __init__(
        self,
        seed: int = 0,
        *,
        policies: str | Path | None = None,
        mode: str = "upstream",
        node_score: str | None = None,
        profile: Profile | None = None,
        memoize: bool = True,
        compute_bound: bool = False,
        gpudra_attributes: bool = False,
        sizing: SizingLookup | None = None,
        run_name: str | None = None,
    ) -> None:
        if run_name is not None:  # e.g. "gpudra+observed": the same strategy with observed-usage sizing
            self.name = run_name
        if node_score is not None and node_score not in NODE_SCORES:
            raise ValueError(f"node_score must be one of {', '.join(NODE_SCORES)} (got {node_score!r})")
        super().__init__(seed, profile=profile, node_score=None if node_score == "fragmentation" else node_score)
        if node_score == "fragmentation":  # a what-if: FGD's gradient in place of NodeResourcesFit's score
            self.node_score = node_score
            self._scorer = None  # `node_local_score` gives it
        self.typical: tuple[TypicalPod, ...] = ()
        if mode not in ("upstream", "scored"):
            raise ValueError(f"mode must be upstream or scored (got {mode!r})")
        self.mode = mode
        # The driver's shared GPUs reserve memory only; with `compute_bound` a GPU also never serves more than
        # 1000 milli of the pods' compute shares (the FGD protocol's resource model, which the trace's sharing
        # enforced), so the allocator is offered only GPUs with the pod's share of compute left.
        self.compute_bound = compute_bound
        # gpudra's NVLink group attribute on the slices: opt-in, as the NVIDIA driver publishes none.
        self.gpudra_attributes = gpudra_attributes
        self.placer = Placer(cast(Mode, mode), memoize=memoize, gpudra_attributes=gpudra_attributes)
        from policyengine import load_policies, shipped_policies_dir

        self.policy_dir = Path(policies) if policies else shipped_policies_dir()
        self.policies = load_policies(self.policy_dir)
        if self.policies.errors:
            raise self.policies.errors[0]
        self._decide = self.policies  # `prepare` checks its claims against the simulated cluster's device shapes
        self.outcomes: Counter[str] = Counter()  # per distinct pod shape: which policy / what happened
        # Observed-usage recommendations the policies may size unannotated pods from (simulator.sizing).
        self.sizing = sizing
        self.sizing_sources: Counter[str] = Counter()  # GPU pods evaluated, by the sizing source that won
        self.granted: dict[str, int] = {}  # pod -> MiB per device of its first placement
        self._claims: dict[str, Claim] = {}
        self._requests: dict[str, list[dict[str, Any]]] = {}  # claim JSON -> its requests (for the DRA score)
        self._unfit: set[tuple[Any, ...]] = set()  # (template and device shape, claim) the allocator refused
        self._shapes: dict[int, tuple[int, Any]] = {}  # class id -> (template, device shape)
        self._answers: dict[tuple[Any, ...], Devices | None] = {}  # (GPU states id, claim, share) -> answer
        self._gpu_ids: dict[tuple[Any, ...], int] = {}  # (template, GPU states in canonical order) -> id
        self._gpu_states: dict[int, int] = {}  # class id -> its GPU states id

    @classmethod
    def runs(cls, settings: RunSettings) -> list[Strategy]:
        """gpudra, and with observed-usage sizing a second run sized from it; on the FGD protocol a shared GPU
        also never serves more than its compute (that protocol's resource model)."""

        def make(**extra: Any) -> Strategy:
            return cls(
                settings.seed, policies=settings.policies, mode=settings.allocator_mode,
                node_score=settings.node_score, profile=settings.scheduler, compute_bound=settings.protocol == "fgd",
                gpudra_attributes=settings.gpudra_attributes, **extra,
            )  # fmt: skip

        runs = [make()]
        if settings.observed is not None:
            runs.append(make(sizing=settings.observed, run_name=OBSERVED_RUN))
        return runs

    def prepare(self, state: ClusterState, pods: list[SimPod]) -> None:
        self._decide = self.policies.with_claim_check(self._claim_check(state))
        if self.node_score == "fragmentation":
            self.typical = typical_pods(pods)
        self.outcomes.clear()
        self.sizing_sources.clear()
        self.granted.clear()
        self._unfit.clear()  # keyed by the state's template and class ids
        self._shapes.clear()
        self._answers.clear()
        self._gpu_ids.clear()
        self._gpu_states.clear()

    def _claim_check(self, state: ClusterState) -> ClaimCheck:
        """Claims shaped by the simulated cluster, as the webhook shapes them by the real one (`dra.shapes`): one
        node per template, its slices as the Placer builds them; alternatives no node can satisfy are dropped, a
        claim with none left follows its policy's onUnsatisfiable (Deny: counted as denied, never placed)."""
        from dra.gpus import device_classes
        from dra.shapes import fold_shapes
        from policyengine import ClaimCheck

        slices = [
            s
            for i, spec in enumerate(state.template_specs)
            if spec.gpu is not None
            for s in node_slices(spec, f"template-{i}", gpudra_attributes=self.gpudra_attributes).slices
        ]
        shapes = fold_shapes(slices, device_classes())
        return ClaimCheck(lambda: shapes)

    def demand_key(self, pod: SimPod) -> Any:
        """The policies read more than the shape: the workload class, the namespace and the pod object itself."""
        return (
            pod.shape, pod.workload_class, pod.namespace,
            id(pod.pod) if pod.pod is not None else None,
            id(pod.namespace_object) if pod.namespace_object is not None else None,
        )  # fmt: skip

    def demand(self, pod: SimPod) -> Demand | None:
        if not pod.is_gpu:
            return Demand(pod.cpu_milli, pod.memory_mib, (), pod.gpu_models)
        obj = pod.as_pod()
        decision = self._decide.evaluate(obj, pod.namespace_object, sizing=self.sizing)
        self.sizing_sources[decision.sizing_source or "unreadable"] += 1
        if not decision.allowed:
            self.outcomes["denied"] += 1
            return None
        if decision.mutates and decision.claim:
            claim = dict(decision.claim)
            self.outcomes[f"policy {decision.policy}"] += 1
        else:  # untouched (no policy, audit mode): the legacy request
            claim = legacy_claim(pod.num_gpu)
            self.outcomes["legacy request"] += 1
        return self.claim_demand(pod, claim)

    def claim_demand(self, pod: SimPod, claim: dict[str, Any]) -> ClaimDemand:
        """The demand of `pod` with the claim spec `claim` (`{"devices": ...}`)."""
        text = json.dumps(claim, sort_keys=True, separators=(",", ":"))
        if text not in self._claims:
            self._claims[text] = prepare_claim(
                {"metadata": {"name": "claim", "namespace": pod.namespace or "default"}, "spec": claim}
            )
            self._requests[text] = list((claim.get("devices") or {}).get("requests") or ())
        # one option stands for "has devices"; the allocator decides which
        options = (Option("claim", pod.num_gpu),)
        return ClaimDemand(pod.cpu_milli, pod.memory_mib, options, pod.gpu_models, text, pod.gpu_milli)

    def devices(self, state: ClusterState, cid: int, demand: Demand) -> Devices | None:
        """The allocator's devices for the claim on class `cid` (after a cheap check that some GPU has room), and
        the DynamicResources score of the subrequests it picked."""
        if not isinstance(demand, ClaimDemand):
            return super().devices(state, cid, demand)
        # classes of one template with the same GPU states (in canonical order) get the same answer
        gpus = self._gpu_states.get(cid)
        if gpus is None:  # interned once per class: the states tuple is long to hash; -1: no GPU has room
            if any(_has_room(g) for g in state.gpu_info(cid).gpus):
                key = (state.representative(cid).template, state.sigs[cid][3])
                gpus = self._gpu_ids.setdefault(key, len(self._gpu_ids))
            else:
                gpus = -1
            self._gpu_states[cid] = gpus
        if gpus < 0:
            return None
        same = (gpus, demand.claim, demand.share_milli)
        known = self._answers.get(same, _MISSING)
        if known is not _MISSING:
            return known  # type: ignore[return-value]
        node = state.representative(cid)
        # whether the allocator can place a claim depends neither on the order of GPUs within NVLink groups nor
        # on the compute shares hold, so one refusal per (template, device shape, claim) holds for every class
        shape = self._shapes.get(cid)
        if shape is None:
            shape = self._shapes[cid] = (node.template, _device_shape(state.sigs[cid][3], self.compute_bound))
        unfit = (shape, demand.claim)
        if unfit in self._unfit:
            return None
        found = claim_devices(
            self.placer, node, demand.claim, self._claims[demand.claim], self._requests[demand.claim],
            demand.share_milli, compute_bound=self.compute_bound,
        )  # fmt: skip
        if self.placer.memoize:
            self._answers[same] = found
            if found is None:
                self._unfit.add(unfit)
        return found

    def node_local_score(self, state: ClusterState, cid: int, demand: Demand, pod: SimPod) -> Mapping[str, int]:
        if self.node_score == "fragmentation":  # the what-if score, in millionths, for the integer sum
            return {"Fragmentation": round(self._fragmentation_score(state, cid, demand) * 1e6)}
        return super().node_local_score(state, cid, demand, pod)

    def _fragmentation_score(self, state: ClusterState, cid: int, demand: Demand) -> float:
        """FGD's score of the node's fragmentation growth (`simulator.frag`), the pod's compute placed as
        the scored allocator places a share (the already-shared GPU with the least left, else a free one) or on
        fully free GPUs, and a CPU pod's CPU; ties go to the fuller node. It ranks nodes only: the allocator still
        picks devices."""
        node = state.representative(cid)
        gpus = state.gpu_info(cid).gpus
        free = [g[1] if g[0] == PLAIN else 0 for g in gpus]
        label = node.spec.model_label
        before = frag_amount(node.free_cpu, tuple(sorted(free)), label, self.typical)
        after = list(free)
        count = demand.options[0].count if demand.options else 0
        share = demand.share_milli if isinstance(demand, ClaimDemand) else 1000
        if share < 1000 and count == 1:
            fits = [i for i, f in enumerate(free) if f >= share]
            if fits:
                best = min(fits, key=lambda i: (free[i] == 1000, gpus[i][2], i))
                after[best] -= share
        else:
            for i in [i for i, f in enumerate(free) if f == 1000][:count]:
                after[i] = 0
        score = fgd_score(before, frag_amount(node.free_cpu - demand.cpu, tuple(sorted(after)), label, self.typical))
        # ties go to the node with the least GPU compute left (the best of the tie-breaks measured)
        return score - 1e-3 * sum(after) / max(1000, 1000 * len(after))

    def choose(self, state: ClusterState, pod: SimPod) -> tuple[int, tuple[Part, ...]] | None:
        choice = super().choose(state, pod)
        if choice is not None and choice[1]:
            self.granted.setdefault(pod.name, max(p.vram for p in choice[1]))
        return choice

    def describe(self) -> dict[str, Any]:
        return {
            "mode": self.mode if self.mode == "upstream" else "scored (what-if: not what a stock cluster does)",
            "policies": str(self.policy_dir), "decisions": dict(self.outcomes),
            "allocator_calls": self.placer.calls, "compute_bound": self.compute_bound, "node_score": self.node_score,
            "gpudra_attributes": self.gpudra_attributes, "sizing_sources": dict(self.sizing_sources),
        }  # fmt: skip
