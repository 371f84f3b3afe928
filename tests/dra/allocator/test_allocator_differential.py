"""Differential test: the upstream mode must equal the Go oracle (`dra-allocate`) on generated problems.

Hypothesis generates the cases; they are sent to the oracle in batches of `BATCH`. CI runs
`GPUDRA_DIFF_CASES` cases (default 2,000) with every feature on (`FeatureSet.latest()`, upstream's
experimental variant) and a sixth of that with list-type attributes off (incubating, kube-scheduler 1.37's
default); set it higher for a longer run. A mismatch writes the case to
`$TMPDIR/allocator-diff-<n>.json` for replay with `dra-allocate < file`.

The cases are the same on every run (hypothesis derandomized), so CI time is predictable: a random draw once
produced a batch that kept the upstream allocator's backtracking search busy for minutes. Set
`GPUDRA_DIFF_RANDOM=1` to explore fresh cases instead.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from dra.allocator import AllocationError, Allocator, FeatureSet, Unsatisfiable
from tests.dra.allocator._generate import case

CASES = int(os.environ.get("GPUDRA_DIFF_CASES", "2000"))
BATCH = 200
EXPLORE = os.environ.get("GPUDRA_DIFF_RANDOM", "") not in ("", "0")
# The gates our FeatureSet.latest() turns on beyond the 1.37 defaults (the rest are on or GA there).
LATEST_GATES = {"DRAListTypeAttributes": True, "DRAFractionalCapacityRange": True}
# kube-scheduler 1.37 as shipped runs upstream's "incubating" variant: list-type attributes off.
INCUBATING_GATES = {"DRAListTypeAttributes": False, "DRAFractionalCapacityRange": True}
VARIANTS = {
    "latest": (LATEST_GATES, FeatureSet.latest(), CASES),
    "incubating": (INCUBATING_GATES, FeatureSet.parse("-DRAListTypeAttributes"), max(CASES // 6, 100)),
}


def call_oracle(oracle: Any, payload: dict[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = oracle(payload)
    return answer


@pytest.fixture(scope="module")
def oracle(dra_allocate_oracle: Any) -> Any:
    """The Go oracle; a missing binary fails the test with the build command (tests/controlplane/fixtures.py)."""
    return dra_allocate_oracle


def ours(c: dict[str, Any], features: FeatureSet) -> dict[str, Any]:
    alloc = Allocator(
        slices=c["resourceSlices"],
        classes=c["deviceClasses"],
        allocated=c["allocatedClaims"],
        features=features,
    )
    try:
        return {"allocations": alloc.allocate(c["claims"], node=c["node"], mode="upstream")}
    except Unsatisfiable:
        return {"unsatisfiable": True}
    except AllocationError as err:
        return {"error": str(err)}


def normalise(out: dict[str, Any]) -> dict[str, Any]:
    if out.get("error") is not None:
        return {"error": True}
    if out.get("unsatisfiable") is not None or not out.get("allocations"):
        return {"unsatisfiable": True}
    allocations = json.loads(json.dumps(out["allocations"]))
    for a in allocations:
        for r in (a.get("devices") or {}).get("results") or []:
            if r.get("shareID"):
                r["shareID"] = "<share>"
    return {"allocations": allocations}


def compare(
    oracle: Any,
    batch: list[dict[str, Any]],
    mismatches: list[str],
    gates: dict[str, bool] = LATEST_GATES,
    features: FeatureSet | None = None,
) -> None:
    features = features or FeatureSet.latest()
    payload = {"cases": [dict(c, features=gates) for c in batch]}
    answers = call_oracle(oracle, payload)["results"]
    assert len(answers) == len(batch)
    for c, theirs in zip(batch, answers, strict=True):
        reported = theirs.get("features") or {}
        for name, on in features.to_json().items():
            assert reported.get(name, on) == on, f"oracle ran with {name}={reported.get(name)}"
        mine = normalise(ours(c, features))
        if mine != normalise(theirs):
            path = Path(os.environ.get("TMPDIR", "/tmp")) / f"allocator-diff-{len(mismatches)}.json"
            path.write_text(json.dumps(dict(c, features=gates), indent=1))
            mismatches.append(f"{path}: ours={json.dumps(mine)[:600]} oracle={json.dumps(normalise(theirs))[:600]}")


@pytest.mark.oracle
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_upstream_mode_equals_the_go_allocator(oracle: Any, variant: str) -> None:
    gates, features, cases = VARIANTS[variant]
    pending: list[dict[str, Any]] = []
    mismatches: list[str] = []
    seen = 0

    @settings(
        max_examples=cases,
        deadline=None,
        database=None,
        derandomize=not EXPLORE,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )
    @given(case())
    def collect(c: dict[str, Any]) -> None:
        nonlocal seen
        seen += 1
        pending.append(json.loads(json.dumps(c)))
        if len(pending) >= BATCH:
            compare(oracle, pending, mismatches, gates, features)
            pending.clear()

    collect()
    if pending:
        compare(oracle, pending, mismatches, gates, features)
    assert seen >= min(cases, 1000) // 2, f"only {seen} cases generated"
    assert not mismatches, f"{len(mismatches)} of {seen} cases differ:\n" + "\n".join(mismatches[:10])
