"""Invariants every allocation must satisfy, checked independently of the allocator's own code paths."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from dra import cel as dra_cel
from dra.quantity import Quantity

_ENV = dra_cel.Environment.dra_selector()


def _q(text: Any) -> Fraction:
    return Quantity.parse(str(text)).value


def _attr(device: dict[str, Any], driver: str, name: str) -> Any:
    attrs = device.get("attributes") or {}
    raw = attrs.get(name)
    if raw is None and name.startswith(driver + "/"):
        raw = attrs.get(name[len(driver) + 1 :])
    if raw is None:
        return None
    for k in ("int", "bool", "string", "version"):
        if raw.get(k) is not None:
            return (k, raw[k])
    return None


def _selected(expr: str, driver: str, device: dict[str, Any]) -> bool:
    return _ENV.compile(expr).evaluate({"device": dra_cel.device_value(driver, device)}) is True


def check(case: dict[str, Any], allocations: list[dict[str, Any]], *, strict_distinct: bool) -> None:
    """Raise AssertionError naming the broken invariant."""
    devices: dict[tuple[str, str, str], tuple[dict[str, Any], dict[str, Any]]] = {}
    newest: dict[tuple[str, str], int] = {}
    for s in case["resourceSlices"]:
        key = (s["spec"]["driver"], s["spec"]["pool"]["name"])
        newest[key] = max(newest.get(key, -1), s["spec"]["pool"]["generation"])
    for s in case["resourceSlices"]:
        spec = s["spec"]
        if spec["pool"]["generation"] != newest[(spec["driver"], spec["pool"]["name"])]:
            continue
        for d in spec.get("devices") or []:
            devices[(spec["driver"], spec["pool"]["name"], d["name"])] = (spec, d)
    counter_values: dict[tuple[str, str, str], Fraction] = {}
    for s in case["resourceSlices"]:
        for cs in s["spec"].get("sharedCounters") or []:
            for name, c in cs["counters"].items():
                counter_values[(s["spec"]["pool"]["name"], cs["name"], name)] = _q(c["value"])
    classes = {c["metadata"]["name"]: c for c in case["deviceClasses"]}

    used: dict[tuple[str, str, str], int] = {}
    capacity: dict[tuple[tuple[str, str, str], str], Fraction] = {}
    counters: dict[tuple[str, str, str], Fraction] = {}
    before: dict[tuple[str, str, str], Fraction] = {}

    def charge(results: list[dict[str, Any]], into: dict[tuple[str, str, str], Fraction], existing: bool) -> None:
        for r in results:
            key = (r["driver"], r["pool"], r["device"])
            if r.get("adminAccess"):
                continue
            if key in devices:
                spec, d = devices[key]
                shared = d.get("allowMultipleAllocations") is True
                if not shared:
                    used[key] = used.get(key, 0) + 1
                    assert existing or used[key] == 1, f"device {key} allocated twice"
                for name, q in (r.get("consumedCapacity") or {}).items():
                    capacity[(key, name)] = capacity.get((key, name), Fraction(0)) + _q(q)
                if not shared or existing:
                    for c in d.get("consumesCounters") or []:
                        for name, v in c["counters"].items():
                            ck = (r["pool"], c["counterSet"], name)
                            into[ck] = into.get(ck, Fraction(0)) + _q(v["value"])

    for old in case["allocatedClaims"]:
        charge(old["status"]["allocation"]["devices"].get("results", []), before, True)
    counters.update(before)
    new_results = [r for a in allocations for r in a["devices"].get("results", [])]
    charge(new_results, counters, False)
    for ck, total in counters.items():
        if before.get(ck, Fraction(0)) <= counter_values.get(ck, Fraction(0)):
            assert total <= counter_values.get(ck, Fraction(0)), f"counter {ck} overdrawn: {total}"
    for (device_key, name), total in capacity.items():
        cap = devices[device_key][1]["capacity"][name]["value"]
        assert total <= _q(cap), f"capacity {name} of {device_key} overdrawn: {total} > {cap}"

    for claim, allocation in zip(case["claims"], allocations, strict=True):
        results = allocation["devices"].get("results", [])
        by_request: dict[str, list[dict[str, Any]]] = {}
        for r in results:
            by_request.setdefault(r["request"], []).append(r)
            assert (r["driver"], r["pool"], r["device"]) in devices, f"unknown device {r}"
        for req in claim["spec"]["devices"]["requests"]:
            if "exactly" in req:
                options = [(req["name"], req["exactly"])]
            else:
                options = [(f"{req['name']}/{s['name']}", s) for s in req["firstAvailable"]]
            chosen = [(n, body) for n, body in options if n in by_request]
            assert len(chosen) == 1, f"request {req['name']}: expected one alternative, got {[n for n, _ in chosen]}"
            name, body = chosen[0]
            got = by_request[name]
            if body.get("allocationMode", "ExactCount") == "ExactCount":
                assert len(got) == body.get("count", 1), f"request {name}: {len(got)} devices"
            for r in got:
                spec, d = devices[(r["driver"], r["pool"], r["device"])]
                exprs = [
                    s["cel"]["expression"] for s in classes[body["deviceClassName"]]["spec"].get("selectors") or []
                ]
                exprs += [s["cel"]["expression"] for s in body.get("selectors") or []]
                for e in exprs:
                    assert _selected(e, spec["driver"], d), f"{r['device']} fails selector {e}"
        for con in claim["spec"]["devices"].get("constraints") or []:
            names = set(con.get("requests") or [])
            scoped = [r for r in results if not names or r["request"] in names or r["request"].split("/")[0] in names]
            attr = con.get("matchAttribute") or con.get("distinctAttribute")
            values = [
                (
                    r["request"].split("/")[0],
                    _attr(devices[(r["driver"], r["pool"], r["device"])][1], r["driver"], attr),
                )
                for r in scoped
            ]
            assert all(v is not None for _, v in values), f"{attr} missing on a device of {names or 'all'}"
            if "matchAttribute" in con:
                assert len({v for _, v in values}) <= 1, f"matchAttribute {attr} violated: {values}"
            elif strict_distinct:
                assert len({v for _, v in values}) == len(values), f"distinctAttribute {attr} violated: {values}"
            else:
                last: dict[str, Any] = {}
                for base, v in values:
                    assert v not in last.values(), f"distinctAttribute {attr} (upstream form) violated: {values}"
                    last[base] = v
