"""Can the allocator (upstream mode) allocate a claim on an empty copy of some shape? Per request, per alternative.

Each `exactly` request and each `firstAvailable` alternative is tried alone, with the constraints that bind it (a
necessary condition: what fails alone fails in any claim), on every shape; then the claim with its surviving
alternatives together. Verdicts are memoised per (claim devices, `DeviceShapes.token`): a repeated admission costs a
digest and a dict lookup. A partial view (`DeviceShapes.limit`) or an empty one decides nothing: all is kept.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dra.allocator import AllocationError, Allocator, FeatureSet, Mode, RequestDiagnosis, Unsatisfiable
from dra.shapes._canonical import digest
from dra.shapes._dominance import redundant_alternatives
from dra.shapes._shape import DeviceShape, DeviceShapes, shape_evidence

__all__ = ["Alternative", "Closest", "RequestVerdict", "SatisfiabilityChecker", "Verdict", "claim_devices", "prune"]

DEFAULT_MEMO_SIZE = 4096


def claim_devices(claim: Any) -> dict[str, Any]:
    """`spec.devices` of a ResourceClaim, a ResourceClaimTemplate, a claim spec or a `dra.model` object (as dicts)."""
    data = claim
    to_k8s = getattr(claim, "to_k8s", None)
    if callable(to_k8s):
        data = to_k8s()
    if not isinstance(data, Mapping):
        raise TypeError(f"claim: expected a ResourceClaim(Template) dict or model (got {type(claim).__name__})")
    spec = data.get("spec", data) or {}
    if "devices" not in spec and isinstance(spec.get("spec"), Mapping):  # a template
        spec = spec["spec"]
    devices = spec.get("devices") or {}
    return dict(devices)


@dataclass(frozen=True, slots=True)
class Closest:
    """The device that came closest to an alternative, on which shape, and the check it failed."""

    shape: str
    where: str
    device: str
    check: str
    fitting: int
    needed: int
    passed: int = 0  # checks the device passed before the one it failed

    def text(self) -> str:
        device = f"device {self.device} of " if self.device else ""
        return f"closest: {device}{self.where}: {self.check}"


@dataclass(frozen=True, slots=True)
class Alternative:
    """One way to satisfy a request (`name` None: the `exactly` request) and the shapes it allocates on alone."""

    request: str
    name: str | None
    shapes: tuple[str, ...]
    closest: Closest | None = None
    error: str | None = None  # the allocator refused the input itself (an unknown class, a CEL error)

    @property
    def ref(self) -> str:
        return f"{self.request}/{self.name}" if self.name is not None else self.request

    @property
    def fits(self) -> bool:
        return bool(self.shapes)


@dataclass(frozen=True, slots=True)
class RequestVerdict:
    name: str
    alternatives: tuple[Alternative, ...]

    @property
    def survivors(self) -> tuple[Alternative, ...]:
        return tuple(a for a in self.alternatives if a.fits)


@dataclass(frozen=True, slots=True)
class Verdict:
    """A claim against one generation of shapes. `decided` False: the view could not decide (nothing is dropped)."""

    requests: tuple[RequestVerdict, ...]
    together: tuple[str, ...]  # shapes on which the claim, surviving alternatives only, allocates
    decided: bool
    generation: int
    note: str = ""  # why undecided, or why requests that fit alone fail together
    redundant: tuple[str, ...] = ()  # alternatives that fit but can never be chosen (dra.shapes._dominance)

    @property
    def satisfiable(self) -> bool:
        return not self.decided or bool(self.together)

    def dropped(self) -> tuple[str, ...]:
        """`request` or `request/alternative` for each alternative no shape can satisfy (none when undecided)."""
        if not self.decided:
            return ()
        return tuple(a.ref for r in self.requests for a in r.alternatives if not a.fits)

    def removable(self) -> tuple[str, ...]:
        """What `prune` takes out: the alternatives no shape can satisfy and those that can never be chosen."""
        return (*self.dropped(), *self.redundant)


def prune(claim_spec_devices: Mapping[str, Any], verdict: Verdict) -> dict[str, Any]:
    """`spec.devices` without the `firstAvailable` alternatives the verdict dropped or found redundant (and
    constraint and config references to them; a constraint or config left naming nothing goes too, since an empty
    list would mean every request). Requests whose every alternative was dropped are kept as they are: the claim is
    refused, not rewritten."""
    dropped = set(verdict.removable())
    requests = []
    gone: set[str] = set()
    for raw in claim_spec_devices.get("requests") or []:
        subs = raw.get("firstAvailable")
        name = raw.get("name", "")
        if subs:
            refs = [f"{name}/{sub.get('name', '')}" for sub in subs]
            kept = [sub for sub, ref in zip(subs, refs, strict=True) if ref not in dropped]
            if kept and len(kept) != len(subs):
                gone.update(ref for ref in refs if ref in dropped)
                raw = {**raw, "firstAvailable": kept}
        requests.append(raw)
    out = dict(claim_spec_devices)
    out["requests"] = requests
    for key in ("constraints", "config"):
        if key in out:
            out[key] = _without(out[key] or [], gone)
    return out


def _without(entries: list[dict[str, Any]], gone: set[str]) -> list[dict[str, Any]]:
    """Constraints or config entries with the dropped alternatives' names taken out of their `requests`."""
    kept = []
    for entry in entries:
        names = entry.get("requests")
        if names:
            left = [n for n in names if n not in gone]
            if not left:
                continue
            if len(left) != len(names):
                entry = {**entry, "requests": left}
        kept.append(entry)
    return kept


def _binding(constraints: list[dict[str, Any]], request: str, sub: str | None) -> list[dict[str, Any]]:
    """The constraints that bind `request` (alternative `sub`), narrowed to it."""
    own = {request} | ({f"{request}/{sub}"} if sub is not None else set())
    out = []
    for c in constraints:
        names = c.get("requests") or []
        if not names:
            out.append(c)
            continue
        mine = [n for n in names if n in own]
        if mine:
            out.append({**c, "requests": mine})
    return out


def _rank(diagnosis: RequestDiagnosis) -> tuple[int, Fraction]:
    c = diagnosis.closest
    return (-c.passed, c.shortfall) if c is not None else (1, Fraction(1))


def _cluster_only(shapes: DeviceShapes) -> DeviceShape:
    slices = tuple(shapes.cluster_slices)
    return DeviceShape("cluster", "cluster-only", (), shape_evidence(slices), 0, "(any)")


class SatisfiabilityChecker:
    """Checks claims against `DeviceShapes`; keeps one allocator per shape and the verdicts of the current token."""

    def __init__(
        self, *, features: FeatureSet | None = None, mode: Mode = "upstream", memo_size: int = DEFAULT_MEMO_SIZE
    ) -> None:
        self.features = features
        self.mode: Mode = mode
        self.memo_size = memo_size
        self._token = ""
        self._allocators: dict[str, Allocator] = {}
        self._verdicts: OrderedDict[str, Verdict] = OrderedDict()
        self._alternatives: OrderedDict[str, Alternative] = OrderedDict()

    def check(self, claim: Any, shapes: DeviceShapes, *, key: str | None = None) -> Verdict:
        """The verdict for `claim` (a claim, a template or its `spec.devices`); `key`: the caller's digest of it."""
        if shapes.token != self._token:
            self._token = shapes.token
            self._allocators.clear()
            self._verdicts.clear()
            self._alternatives.clear()
        devices = claim_devices(claim) if key is None or key not in self._verdicts else {}
        if key is None:
            key = digest([devices.get("requests"), devices.get("constraints")])
        verdict = self._verdicts.get(key)
        if verdict is not None:
            self._verdicts.move_to_end(key)
            return verdict
        verdict = self._decide(devices, shapes)
        self._remember(self._verdicts, key, verdict)
        return verdict

    def _remember(self, memo: OrderedDict[str, Any], key: str, value: Any) -> None:
        memo[key] = value
        if len(memo) > self.memo_size:
            memo.popitem(last=False)

    def _targets(self, shapes: DeviceShapes) -> tuple[DeviceShape, ...]:
        return shapes.shapes or ((_cluster_only(shapes),) if shapes.cluster_slices else ())

    def _allocator(self, shape: DeviceShape, shapes: DeviceShapes) -> Allocator:
        allocator = self._allocators.get(shape.key)
        if allocator is None:
            allocator = self._allocators[shape.key] = Allocator(
                slices=[*shape.slices, *shapes.cluster_slices], classes=shapes.classes, features=self.features
            )
        return allocator

    def _decide(self, devices: Mapping[str, Any], shapes: DeviceShapes) -> Verdict:
        targets = self._targets(shapes)
        constraints = list(devices.get("constraints") or [])
        requests = []
        for raw in devices.get("requests") or []:
            name = str(raw.get("name", ""))
            alternatives = [
                self._alternative(name, sub.get("name"), {"name": name, "firstAvailable": [sub]}, constraints, shapes)
                for sub in raw.get("firstAvailable") or []
            ] or [self._alternative(name, None, raw, constraints, shapes)]
            requests.append(RequestVerdict(name, tuple(alternatives)))
        if not targets:
            return Verdict(tuple(requests), (), False, shapes.generation, "no device shapes are known yet")
        if not shapes.complete:
            return Verdict(tuple(requests), (), False, shapes.generation, shapes.limit or "")
        if not all(r.survivors for r in requests):
            return Verdict(tuple(requests), (), True, shapes.generation)
        verdict = Verdict(tuple(requests), (), True, shapes.generation)
        redundant = redundant_alternatives(
            devices,
            {r.name: tuple(a.shapes for a in r.alternatives) for r in requests},
            ((s.key, s.node_name, self._allocator(s, shapes)) for s in targets),
        )
        if len(requests) == 1:  # alone is together: the allocator takes the first alternative that fits
            together = tuple(s.key for s in targets if any(s.key in a.shapes for a in requests[0].alternatives))
            return Verdict(tuple(requests), together, True, shapes.generation, redundant=redundant)
        claim = {"metadata": {"name": "satisfiability"}, "spec": {"devices": prune(devices, verdict)}}
        fits: list[str] = []
        note = ""
        for shape in targets:
            try:
                self._allocator(shape, shapes).allocate([claim], node=shape.node_name, mode=self.mode)
            except Unsatisfiable as err:
                note = note or f"on {shape.describe()}: {err.summary}"
                continue
            except AllocationError as err:
                note = note or f"on {shape.describe()}: {err}"
                continue
            fits.append(shape.key)
        note = "" if fits else f"every request fits alone, not together; {note}"
        return Verdict(tuple(requests), tuple(fits), True, shapes.generation, note, redundant if fits else ())

    def _alternative(
        self,
        request: str,
        sub: str | None,
        raw: Mapping[str, Any],
        constraints: list[dict[str, Any]],
        shapes: DeviceShapes,
    ) -> Alternative:
        binding = _binding(constraints, request, sub)
        one = {"requests": [raw if sub is not None else {**raw, "name": request}], "constraints": binding}
        key = digest([request, sub, one])
        hit = self._alternatives.get(key)
        if hit is not None:
            return hit
        claim = {"metadata": {"name": "satisfiability"}, "spec": {"devices": one}}
        fits: list[str] = []
        best: tuple[tuple[int, Fraction], Closest] | None = None
        errors: list[str] = []
        for shape in self._targets(shapes):
            allocator = self._allocator(shape, shapes)
            try:
                allocator.allocate([claim], node=shape.node_name, mode=self.mode)
            except AllocationError as err:
                errors.append(str(err))
                continue
            except Unsatisfiable as err:
                for rank, closest in self._closest(allocator, claim, shape, err):
                    if best is None or rank < best[0]:
                        best = (rank, closest)
                continue
            fits.append(shape.key)
        error = errors[0] if errors and not fits and best is None else None
        alternative = Alternative(request, sub, tuple(fits), None if fits else (best[1] if best else None), error)
        self._remember(self._alternatives, key, alternative)
        return alternative

    def _closest(
        self, allocator: Allocator, claim: dict[str, Any], shape: DeviceShape, err: Unsatisfiable
    ) -> Iterator[tuple[tuple[int, Fraction], Closest]]:
        diagnoses = allocator.unsatisfied_requests([claim], node=shape.node_name, mode=self.mode)
        if not diagnoses:  # enough devices alone: a constraint (matchAttribute, counters together) failed
            detail = next((d.strip() for d in err.details if d.strip()), err.summary)
            yield (-(1 << 30), Fraction(0)), Closest(shape.key, shape.describe(), "", detail, 0, 0, 1 << 30)
            return
        for d in diagnoses:
            c = d.closest
            if c is None:
                check = "no device of this shape to compare"
                yield _rank(d), Closest(shape.key, shape.describe(), "", check, d.fitting, d.needed)
                continue
            device = c.candidate.key[2]
            check = c.failure or "fits alone"
            yield _rank(d), Closest(shape.key, shape.describe(), device, check, d.fitting, d.needed, c.passed)
