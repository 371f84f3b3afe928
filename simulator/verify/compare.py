"""Each real decision against the model's answer in the same state: feasibility, the real node in the model's tie set,
the same devices as the upstream allocator picks on that node; every disagreement kept with its likely cause."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dra.allocator import Mode

from .objects import Admitted
from .replay import RealDecision, Snapshot, Step

__all__ = ["Disagreement", "Tally", "model_ask", "tally"]

ALLOCATOR_MODE: Mode = "upstream"  # the devices kube-scheduler's allocator picks: what "same devices" compares with


def model_ask(profile: Any, *, seed: int = 0, mode: Mode = ALLOCATOR_MODE) -> Callable[[Snapshot, Admitted], Any]:
    """Asks `simulator.scheduling` (with `profile`) what it would do with the pod in the snapshot's cluster."""
    from simulator.scheduling import Placer, decide, sim_pod, state_from_objects

    # memoised by node template (the slices' content), device usage and claim: valid across states, so one serves
    # every decision (a fresh one per state would rebuild every node's templates each time)
    placer = Placer(mode)

    def ask(snapshot: Snapshot, admitted: Admitted) -> Any:
        bound = [(b.pod, list(b.claims)) for b in snapshot.bound]
        state = state_from_objects(list(snapshot.nodes), list(snapshot.slices), bound, placer=placer)
        pod = sim_pod(admitted.pod)
        claims = list(admitted.claims)
        return decide(state, pod, profile, claims=claims, mode=mode, seed=seed, placer=placer)

    return ask


@dataclass(frozen=True, slots=True)
class Disagreement:
    """One decision where the model and kube-scheduler differ: which check, the nodes, the scores, and a cause."""

    pod: str
    check: str  # feasibility | node | devices
    cause: str  # a short category: what to count
    detail: str  # the sentence a reader needs
    real_node: str | None
    sim_tie_set: tuple[str, ...]
    scores: dict[str, int]
    plugin_scores: dict[str, dict[str, int]]

    def to_json(self) -> dict[str, Any]:
        return {
            "pod": self.pod,
            "check": self.check,
            "cause": self.cause,
            "detail": self.detail,
            "real_node": self.real_node,
            "sim_tie_set": list(self.sim_tie_set),
            "scores": self.scores,
            "plugin_scores": self.plugin_scores,
        }


@dataclass(slots=True)
class Tally:
    decisions: int = 0
    bound: int = 0
    feasibility_agreed: int = 0
    node_in_top_set: int = 0
    same_devices: int = 0
    ties: int = 0  # bound decisions whose model tie set held more than one node (kube-scheduler picks at random)
    disagreements: list[Disagreement] = field(default_factory=list)

    def figures(self) -> dict[str, Any]:
        def ratio(n: int, d: int) -> float | None:
            return round(n / d, 4) if d else None

        found = self.disagreements
        return {
            "decisions": self.decisions,
            "bound": self.bound,
            "unschedulable": self.decisions - self.bound,
            "feasibility_agreement": ratio(self.feasibility_agreed, self.decisions),
            "node_in_top_set": ratio(self.node_in_top_set, self.bound),
            "same_devices": ratio(self.same_devices, self.bound),
            "tied_decisions": ratio(self.ties, self.bound),
            "causes": dict(Counter(d.cause for d in found).most_common()),
            "disagreements": [d.to_json() for d in found],
        }


def _scores_of(model: Any, nodes: Sequence[str | None]) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    wanted = [n for n in nodes if n is not None]
    scores = {n: int(model.scores[n]) for n in wanted if n in model.scores}
    plugins = {n: dict(model.plugin_scores[n]) for n in wanted if n in model.plugin_scores}
    return scores, plugins


def _node_cause(model: Any, real: str) -> tuple[str, str]:
    """Why the real node is not in the model's tie set: infeasible or not scored there, or the plugin that put the
    model's choice ahead of it by the most."""
    if real not in model.feasible:
        return "real node infeasible in the model", f"{real} passed kube-scheduler's filters but not the model's"
    if real not in model.scores:
        return "real node not scored", f"{real} was feasible but left out by percentageOfNodesToScore in the model"
    top = model.node if model.node is not None else sorted(model.tie_set)[0]
    ours, theirs = model.plugin_scores.get(top, {}), model.plugin_scores.get(real, {})
    gaps = {p: ours.get(p, 0) - theirs.get(p, 0) for p in set(ours) | set(theirs)}
    plugin = max(sorted(gaps), key=lambda p: gaps[p]) if gaps else "total"
    return (
        f"score: {plugin}",
        f"the model scores {top} {model.scores[top]} and {real} {model.scores[real]}; {plugin} differs most "
        f"({ours.get(plugin, 0)} vs {theirs.get(plugin, 0)})",
    )


def judge(model: Any, real: RealDecision) -> tuple[bool, bool, bool, list[Disagreement]]:
    """(feasibility agrees, real node in the tie set, same devices, disagreements) for one decision."""
    found: list[Disagreement] = []
    tie = tuple(sorted(model.tie_set))

    def disagree(check: str, cause: str, detail: str) -> None:
        nodes = [*tie, real.node]
        scores, plugins = _scores_of(model, nodes)
        found.append(Disagreement(real.pod, check, cause, detail, real.node, tie, scores, plugins))

    feasible = bool(model.feasible)
    if real.node is None:
        if feasible:
            some = ", ".join(sorted(model.feasible)[:4])
            disagree("feasibility", "real scheduler found no node", f"kube-scheduler: {real.message}; model: {some}")
        return not feasible, False, False, found
    if not feasible:
        disagree("feasibility", "model found no node", f"kube-scheduler bound it on {real.node}; model: no node fits")
        return False, False, False, found
    in_top = real.node in model.tie_set
    if not in_top:
        disagree("node", *_node_cause(model, real.node))
    if real.node not in model.devices:  # infeasible there in the model: the node record says so
        return True, in_top, False, found
    predicted = tuple(model.devices[real.node])
    same = sorted(predicted) == sorted(real.devices)
    if not same:
        disagree("devices", "devices differ", f"on {real.node}: kube-scheduler {list(real.devices)}, upstream "
                 f"allocator {list(predicted)}")  # fmt: skip
    return True, in_top, same, found


def tally(steps: Sequence[Step[Any]]) -> Tally:
    """The figures over `steps`."""
    result = Tally()
    for step in steps:
        agreed, in_top, same, found = judge(step.model, step.real)
        result.decisions += 1
        result.feasibility_agreed += agreed
        if step.real.node is not None:
            result.bound += 1
            result.node_in_top_set += in_top
            result.same_devices += same
            result.ties += len(step.model.tie_set) > 1
        result.disagreements.extend(found)
    return result
