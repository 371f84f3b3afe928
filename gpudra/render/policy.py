"""Policy results as `gpudra policy lint|test|explain` print them: listings, test diffs and one pod's decision."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from policyengine import ContainerRequest, Decision, PolicySet, pod_facts

from .documents import yaml_stream

if TYPE_CHECKING:
    from policyengine.testing import PolicyTestResult

__all__ = [
    "controller_additions",
    "controller_json",
    "explanation",
    "lint_listing",
    "policy_errors",
    "policy_test_report",
    "sizing_json",
]


def sizing_json(pod: dict[str, Any]) -> list[dict[str, Any]]:
    """Per GPU container: which sizing source won and why (`gpu.containers[].sizing`); [] when unreadable."""
    try:
        facts = pod_facts(pod)
    except Exception:  # an unreadable pod is reported by the decision itself
        return []
    return [{"container": c.name, **c.to_cel()["sizing"]} for c in facts.containers if c.legacy]


def policy_errors(policies: PolicySet) -> str:
    """One `error: file:line:column: ...` line per policy that did not load or compile."""
    return "".join(f"error: {e}\n" for e in policies.errors)


def lint_listing(policies: PolicySet) -> str:
    """One `ok` line per loaded policy: name, priority, mode and where it is defined."""
    lines = [f"ok  {p.name:<24} priority {p.priority:<5} {p.mode:<8} {p.where}" for p in policies.policies]
    return "\n".join(lines) + "\n"


def policy_test_report(results: Sequence[PolicyTestResult]) -> tuple[str, int]:
    """PASS/FAIL/ERROR lines (a diff under each failure) and the `N passed, M failed` total; and M."""
    out: list[str] = []
    passed = failed = 0
    for result in results:
        for error in result.errors:
            out.append(f"ERROR {result.file}: {error}")
            failed += 1
        for case in result.cases:
            if case.passed:
                passed += 1
                out.append(f"PASS  {result.file}: {case.name}")
            else:
                failed += 1
                out.append(f"FAIL  {result.file}: {case.name}")
                out.extend("      " + line for failure in case.failures for line in failure.splitlines())
    out.append(f"{passed} passed, {failed} failed")
    return "\n".join(out) + "\n", failed


def _one_line(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _policy_state(name: str, decision: Decision) -> str:
    builders = [c.policy for c in decision.containers if c.policy] or [decision.policy or ""]
    if name in builders:
        built = [c.container for c in decision.containers if c.policy == name and c.request == c.container]
        whose = f" for {', '.join(built)}" if len(built) < len(decision.containers) and built else ""
        return f"builds the claim{whose} ({decision.mode})"
    if name in decision.matched:
        return "matched"
    if name in decision.shadowed:
        return "matched, shadowed by a higher-priority claim policy"
    if name in decision.unmatched:
        condition, expression = decision.unmatched[name]
        return f"not matched: matchCondition '{condition}' is false: {_one_line(expression)}"
    return "not matched"


_FACTS = ("legacy", "dra", "total", "max", "resources", "draDevices", "requestsOnly", "mixed", "hami")


def _facts_line(pod: dict[str, Any]) -> str | None:
    """The `gpu` facts the policies' conditions read (what a condition was true or false of)."""
    try:
        facts = pod_facts(pod).to_cel()
    except Exception:  # an unreadable pod is reported by the decision itself
        return None
    return "gpu facts: " + ", ".join(f"gpu.{k} = {json.dumps(facts[k], sort_keys=True)}" for k in _FACTS)


def _variable_lines(decision: Decision) -> list[str]:
    """The pod-level variables of each matched policy, then each container's claim variables: the values the claim
    was built from (a claim policy's sizing lives there, not at pod level)."""
    lines: list[str] = []
    if decision.variables:
        lines.append("variables (pod level, read by validations, warnings and the claim):")
        for policy_name, values in decision.variables.items():
            for var, value in values.items():
                lines.append(f"  {policy_name}.{var} = {json.dumps(value, sort_keys=True)}")
    for request in decision.containers:
        if not request.variables:
            continue
        policy = request.policy or decision.policy
        lines.append(f"claim variables of {policy} for container {request.container} (the claim's values):")
        for var, value in request.variables.items():
            lines.append(f"  {policy}.claim.{var} = {json.dumps(value, sort_keys=True)}")
    return lines


_MEMORY_AT_LEAST = re.compile(r"memory\.compareTo\(quantity\('([^']+)'\)\) >= 0")
_PROFILE = re.compile(r"\.profile == '([^']+)'")


def _alternative_size(alternative: dict[str, Any]) -> str:
    """What one request or subrequest asks of a device's size: memory, a MIG profile, a share; "" for none."""
    selectors = " ".join(str(_mapping(s.get("cel")).get("expression", "")) for s in alternative.get("selectors") or [])
    shared = _mapping(_mapping(alternative.get("capacity")).get("requests")).get("memory")
    if shared:
        return f"a {shared} share"
    found = _MEMORY_AT_LEAST.search(selectors) or _PROFILE.search(selectors)
    if found is None:
        return ""
    return f"memory >= {found.group(1)}" if found.re is _MEMORY_AT_LEAST else f"MIG {found.group(1)}"


def _size_line(decision: Decision, request: ContainerRequest, sizing: dict[str, Any] | None) -> str:
    """The size that reached this container's request (per alternative) and why: its sizing source's reason."""
    if request.request != request.container:
        shared = [request.request, *(n for n in request.also if n != request.container)]
        extra = (
            " and an extra request of its own for the devices they lack" if request.container in request.also else ""
        )
        return (
            f"shares request {', '.join(shared)}{extra} (an init container reuses the devices of the containers it "
            "precedes)"
        )
    requests = _mapping(_mapping(dict(decision.claim or {})).get("devices")).get("requests") or []
    entry: dict[str, Any] = next((_mapping(r) for r in requests if _mapping(r).get("name") == request.request), {})
    alternatives = entry.get("firstAvailable") or [{"name": request.request, **_mapping(entry.get("exactly"))}]
    sizes = [(str(a.get("name")), _alternative_size(a)) for a in alternatives]
    shown = ", ".join(f"{name}: {size}" for name, size in sizes if size)
    why = f"; sizing {sizing['source']}: {sizing['reason']}" if sizing else ""
    if not shown:
        return f"size in its claim: none (any device of the class, {len(alternatives)} alternative(s)){why}"
    return f"size in its claim: {shown}{why}"


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def controller_json(template_pod: dict[str, Any], decided: dict[str, Any]) -> dict[str, Any]:
    """What the workload's controller adds to the template's pod (`workloads.controller_pod`): the labels and
    annotations it sets, its owner, the env it adds and the command and args it sets, per container, and the
    containers and init containers it adds; {} for none."""
    before, after = _mapping(template_pod.get("metadata")), _mapping(decided.get("metadata"))
    added: dict[str, Any] = {}
    for field in ("labels", "annotations"):
        old, new = _mapping(before.get(field)), _mapping(after.get(field))
        changed = {k: v for k, v in new.items() if old.get(k) != v}
        if changed:
            added[field] = changed
    owners = after.get("ownerReferences")
    if isinstance(owners, list) and owners and owners != before.get("ownerReferences"):
        added["owner"] = [f"{o.get('kind')}/{o.get('name')}" for o in owners if isinstance(o, dict)]
    old_containers = _mapping(template_pod.get("spec")).get("containers") or []
    for index, container in enumerate(_mapping(decided.get("spec")).get("containers") or []):
        if index >= len(old_containers):  # a container the controller adds (KubeRay's autoscaler)
            added.setdefault("containers", []).append(str(_mapping(container).get("name")))
            continue
        original = old_containers[index]
        if not isinstance(container, dict) or not isinstance(original, dict):
            continue
        names = {e.get("name") for e in original.get("env") or [] if isinstance(e, dict)}
        env = [
            str(e.get("name")) for e in container.get("env") or [] if isinstance(e, dict) and e.get("name") not in names
        ]
        if env:
            added.setdefault("env", {})[str(container.get("name"))] = env
        if (container.get("command"), container.get("args")) != (original.get("command"), original.get("args")):
            command = {"command": container.get("command"), "args": container.get("args")}
            added.setdefault("command", {})[str(container.get("name"))] = command
    old_init = {
        c.get("name") for c in _mapping(template_pod.get("spec")).get("initContainers") or [] if isinstance(c, dict)
    }
    new_init = [c.get("name") for c in _mapping(decided.get("spec")).get("initContainers") or [] if isinstance(c, dict)]
    if any(name not in old_init for name in new_init):
        added["initContainers"] = [str(name) for name in new_init if name not in old_init]
    return added


def controller_additions(template_pod: dict[str, Any], decided: dict[str, Any]) -> list[str]:
    """`controller_json` as explain prints it, under the pod's name."""
    added = controller_json(template_pod, decided)
    lines = [f"  {field}: " + ", ".join(f"{k}={v}" for k, v in added[field].items())
             for field in ("labels", "annotations") if field in added]  # fmt: skip
    if "owner" in added:
        lines.append("  owner: " + ", ".join(added["owner"]))
    lines.extend(f"  env of {name}: " + ", ".join(env) for name, env in added.get("env", {}).items())
    if "containers" in added:
        lines.append("  containers: " + ", ".join(added["containers"]))
    if "initContainers" in added:
        lines.append("  init containers: " + ", ".join(added["initContainers"]))
    lines.extend(f"  command of {name}: {json.dumps(c['command'])} {json.dumps(c['args'])}"
                 for name, c in added.get("command", {}).items())  # fmt: skip
    return ["as its controller creates it:", *lines] if lines else []


def explanation(
    pod: dict[str, Any],
    policies: PolicySet,
    decision: Decision,
    notes: Sequence[str] = (),
    controller: Sequence[str] = (),
) -> str:
    """Which policies matched and why, the verdict (and `notes` on it, such as the scheduler's own path), each
    container's request, the claim, warnings, variables; `controller`: what the workload's controller adds to the
    pod (`controller_additions`), right after its name."""
    meta = pod.get("metadata") or {}
    name = meta.get("name") or (str(meta.get("generateName", "")) + "<generated>")
    lines = [f"pod {decision.namespace}/{name}", *controller, "policies (in evaluation order):"]
    for policy in policies.policies:
        lines.append(f"  {policy.name:<20} priority {policy.priority:<5} {_policy_state(policy.name, decision)}")
    lines.extend(f"  error: {e}" for e in policies.errors)
    facts = _facts_line(pod)
    if facts is not None:
        lines.append(facts)
    lines.append("verdict: " + ("allowed" if decision.allowed else f"denied ({decision.reason}): {decision.message}"))
    for violation in decision.violations:
        lines.append(f"  {violation.mode}: {violation.policy}: {violation.message}")
    lines.extend(notes)
    sizings = {s["container"]: s for s in sizing_json(pod)}
    for request in decision.containers:
        replaced = ", ".join(f"{k}={v}" for k, v in request.replaces.items())
        where = f"{request.kind}[{request.index}]"
        by = f" by {request.policy}" if request.policy else ""
        lines.append(f"container {request.container} ({where}): request {request.request}{by}, replaces {replaced}")
        lines.append("  " + _size_line(decision, request, sizings.get(request.container)))
    for sizing in sizings.values():
        size = sizing["vram"] or "none"
        lines.append(f"sizing {sizing['container']}: source {sizing['source']}, vram {size}: {sizing['reason']}")
    if decision.claim is not None:
        lines.append("claim:")
        lines.extend("  " + line for line in yaml_stream([decision.claim]).splitlines())
    for warning in decision.warnings:
        lines.append(f"warning: {warning}")
    lines.extend(_variable_lines(decision))
    return "\n".join(lines) + "\n"
