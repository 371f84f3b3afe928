"""Turn a policy's evaluated `claim` tree into DRA v1 request, constraint and config objects for one container.

The policy writes selectors as CEL text and names subrequests in `constraints[].requests`; here selectors become
`{cel: {expression}}` and names become `<request>/<subrequest>`, so authors never spell the request name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dra.errors import CelCompileError, ModelValidationError, PolicyError

from . import _cel, verified
from ._eval import Failed, run
from .loader import CompiledExpr, CompiledPolicy

__all__ = ["BuiltRequest", "build_request", "claim_expressions", "validate_claim"]

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# resource/v1 types.go: DeviceRequestsMaxSize, FirstAvailableDeviceRequestMaxSize, DeviceSelectorsMaxSize.
_MAX_REQUESTS = 32
_MAX_SUBREQUESTS = 8
_MAX_SELECTORS = 32
_MAX_CONSTRAINTS = 32


def claim_expressions(node: Any) -> list[CompiledExpr]:
    """Every expression in a policy's `claim` tree, in document order."""
    if isinstance(node, CompiledExpr):
        return [node]
    if isinstance(node, dict):
        return [leaf for value in node.values() for leaf in claim_expressions(value)]
    if isinstance(node, list):
        return [leaf for value in node for leaf in claim_expressions(value)]
    return []


@dataclass(frozen=True)
class BuiltRequest:
    request: dict[str, Any]
    constraints: list[dict[str, Any]]
    config: list[dict[str, Any]]


class _Builder:
    def __init__(self, policy: CompiledPolicy, request_name: str) -> None:
        self.policy = policy
        self.name = request_name

    def fail(self, where: str, message: str) -> Failed:
        return Failed(PolicyError(f"{where}: {message}", file=self.policy.file, line=self.policy.line))

    def resolve(self, node: Any, activation: Mapping[str, Any]) -> Any:
        if isinstance(node, CompiledExpr):
            return _cel.to_json(run(node, activation))
        if isinstance(node, dict):
            return {key: self.resolve(value, activation) for key, value in node.items()}
        if isinstance(node, list):
            return [self.resolve(value, activation) for value in node]
        return node

    def selectors(self, value: Any, where: str) -> list[dict[str, Any]]:
        if not isinstance(value, list):
            raise self.fail(where, f"expected a list of device selector expressions (got {value!r})")
        out: list[dict[str, Any]] = []
        for index, item in enumerate(value):
            if isinstance(item, dict) and isinstance(item.get("cel"), dict):
                text = item["cel"].get("expression")
            else:
                text = item
            if not isinstance(text, str) or not text:
                raise self.fail(f"{where}[{index}]", f"expected a device selector expression (got {item!r})")
            try:
                _cel.compile_selector(text)
            except CelCompileError as exc:
                raise self.fail(
                    f"{where}[{index}]", f"device selector does not compile: {exc.message}: {text}"
                ) from exc
            out.append({"cel": {"expression": text}})
        if len(out) > _MAX_SELECTORS:
            raise self.fail(where, f"at most {_MAX_SELECTORS} selectors are allowed (got {len(out)})")
        return out

    def device(self, data: Any, where: str, sub: bool) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise self.fail(where, f"expected a mapping (got {data!r})")
        out: dict[str, Any] = {}
        if sub:
            name = data.get("name")
            if not isinstance(name, str) or not _DNS_LABEL.match(name) or len(name) > 63:
                raise self.fail(f"{where}.name", f"expected a DNS label (got {name!r})")
            out["name"] = name
        klass = data.get("deviceClassName")
        if not isinstance(klass, str) or not klass:
            raise self.fail(f"{where}.deviceClassName", f"expected a DeviceClass name (got {klass!r})")
        out["deviceClassName"] = klass
        if data.get("selectors") is not None:
            selectors = self.selectors(data["selectors"], f"{where}.selectors")
            if selectors:
                out["selectors"] = selectors
        mode = data.get("allocationMode")
        if mode is not None:
            if mode not in ("ExactCount", "All"):
                raise self.fail(f"{where}.allocationMode", f"expected ExactCount or All (got {mode!r})")
            out["allocationMode"] = mode
        count = data.get("count")
        if count is not None:
            if type(count) is not int or count < 1:
                raise self.fail(f"{where}.count", f"expected a positive integer (got {count!r})")
            if mode != "All":
                out["count"] = count
        capacity = data.get("capacity")
        if capacity is not None:
            requests = capacity.get("requests") if isinstance(capacity, dict) else None
            if not isinstance(requests, dict):
                raise self.fail(f"{where}.capacity", f"expected {{requests: {{name: quantity}}}} (got {capacity!r})")
            if requests:
                out["capacity"] = {"requests": {str(k): str(v) for k, v in sorted(requests.items())}}
        if data.get("tolerations") is not None:
            if not isinstance(data["tolerations"], list):
                raise self.fail(f"{where}.tolerations", f"expected a list (got {data['tolerations']!r})")
            if data["tolerations"]:
                out["tolerations"] = data["tolerations"]
        if not sub and data.get("adminAccess") is not None:
            if type(data["adminAccess"]) is not bool:
                raise self.fail(f"{where}.adminAccess", f"expected a bool (got {data['adminAccess']!r})")
            out["adminAccess"] = data["adminAccess"]
        return out

    def targets(self, value: Any, where: str, subrequests: set[str]) -> list[str]:
        if value is None or value == []:
            return [self.name]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(where, f"expected a list of subrequest names (got {value!r})")
        for sub in value:
            if sub not in subrequests:
                known = ", ".join(sorted(subrequests)) or "none: the request has no firstAvailable"
                raise self.fail(where, f"no subrequest named {sub!r} (known: {known})")
        return [f"{self.name}/{sub}" for sub in value]

    def build(self, tree: dict[str, Any], activation: Mapping[str, Any]) -> BuiltRequest:
        data = self.resolve(tree, activation)
        request: dict[str, Any] = {"name": self.name}
        subrequests: set[str] = set()
        alternatives = data.get("firstAvailable")
        if alternatives is not None:
            if not isinstance(alternatives, list) or not alternatives:
                raise self.fail("spec.claim.firstAvailable", f"expected a non-empty list (got {alternatives!r})")
            if len(alternatives) > _MAX_SUBREQUESTS:
                raise self.fail(
                    "spec.claim.firstAvailable", f"at most {_MAX_SUBREQUESTS} alternatives (got {len(alternatives)})"
                )
            subs = [self.device(a, f"spec.claim.firstAvailable[{i}]", True) for i, a in enumerate(alternatives)]
            subrequests = {s["name"] for s in subs}
            if len(subrequests) != len(subs):
                raise self.fail("spec.claim.firstAvailable", "subrequest names must be unique")
            request["firstAvailable"] = subs
        else:
            request["exactly"] = self.device(data, "spec.claim", False)
        constraints: list[dict[str, Any]] = []
        raw_constraints = data.get("constraints") or []
        if not isinstance(raw_constraints, list):
            raise self.fail("spec.claim.constraints", f"expected a list (got {raw_constraints!r})")
        for index, item in enumerate(raw_constraints):
            where = f"spec.claim.constraints[{index}]"
            if item is None:
                continue
            if not isinstance(item, dict):
                raise self.fail(where, f"expected a mapping (got {item!r})")
            constraint: dict[str, Any] = {
                "requests": self.targets(item.get("requests"), f"{where}.requests", subrequests)
            }
            kinds = [k for k in ("matchAttribute", "distinctAttribute") if item.get(k) is not None]
            if len(kinds) != 1 or not isinstance(item[kinds[0]], str) or "/" not in item[kinds[0]]:
                raise self.fail(
                    where, f"expected one fully qualified matchAttribute or distinctAttribute (got {item!r})"
                )
            constraint[kinds[0]] = item[kinds[0]]
            constraints.append(constraint)
        config: list[dict[str, Any]] = []
        raw_config = data.get("config") or []
        if not isinstance(raw_config, list):
            raise self.fail("spec.claim.config", f"expected a list (got {raw_config!r})")
        for index, item in enumerate(raw_config):
            where = f"spec.claim.config[{index}]"
            if item is None:
                continue
            opaque = item.get("opaque") if isinstance(item, dict) else None
            if not isinstance(opaque, dict) or not isinstance(opaque.get("driver"), str) or "parameters" not in opaque:
                raise self.fail(where, f"expected {{opaque: {{driver, parameters}}}} (got {item!r})")
            targets = self.targets(item.get("requests"), f"{where}.requests", subrequests)
            config.append(
                {"requests": targets, "opaque": {"driver": opaque["driver"], "parameters": opaque["parameters"]}}
            )
        return BuiltRequest(request, constraints, config)


def build_request(
    tree: dict[str, Any], activation: Mapping[str, Any], request_name: str, policy: CompiledPolicy
) -> BuiltRequest:
    """The DRA request named `request_name` (and its constraints and config) for one container."""
    return _Builder(policy, request_name).build(tree, activation)


_VALIDATED: dict[str, tuple[str, ...]] = {}
_VALIDATED_MAX = 4096
# Keys are the claims' reprs, which carry strings a pod's creator chose (annotations read into selectors): the memo is
# bounded in characters too, and a claim too large to be worth remembering is validated each time.
_VALIDATED_MAX_CHARS = 4 * 2**20
_VALIDATED_MAX_KEY_CHARS = 64 * 2**10
_validated_chars = 0


def validate_claim(claim: Mapping[str, Any]) -> list[str]:
    """Problems Kubernetes would report for this ResourceClaimSpec (empty when it is valid); memoized."""
    global _validated_chars
    # repr, not canonical JSON: several times cheaper, and equal reprs mean equal JSON data (the claim is built
    # from CEL results converted to JSON); a claim spelled in another key order only misses the memo.
    key = repr(claim)
    found = _VALIDATED.get(key)
    if found is None:
        found = verified.claim_verdict(key)  # kept between processes for short CLI calls only
        if found is None:
            found = tuple(_validate_claim(claim))
            verified.keep_claim_verdict(key, found)
        if len(key) <= _VALIDATED_MAX_KEY_CHARS:
            if len(_VALIDATED) >= _VALIDATED_MAX or _validated_chars + len(key) > _VALIDATED_MAX_CHARS:
                _VALIDATED.clear()
                _validated_chars = 0
            _VALIDATED[key] = found
            _validated_chars += len(key)
    return list(found)


def validated_memo_chars() -> int:
    """Characters of claim text the validation memo holds now (bounded by `_VALIDATED_MAX_CHARS`)."""
    return _validated_chars


def _validate_claim(claim: Mapping[str, Any]) -> list[str]:
    devices = claim.get("devices", {})
    problems: list[str] = []
    if len(devices.get("requests", [])) > _MAX_REQUESTS:
        problems.append(f"devices.requests: at most {_MAX_REQUESTS} requests (got {len(devices['requests'])})")
    if len(devices.get("constraints", [])) > _MAX_CONSTRAINTS:
        problems.append(f"devices.constraints: at most {_MAX_CONSTRAINTS} (got {len(devices['constraints'])})")
    if len(devices.get("config", [])) > _MAX_CONSTRAINTS:
        problems.append(f"devices.config: at most {_MAX_CONSTRAINTS} (got {len(devices['config'])})")
    from dra.model import ResourceClaimSpec  # pydantic's models: built when a claim is first validated

    try:
        ResourceClaimSpec.from_k8s(dict(claim)).validate_k8s()
    except ModelValidationError as exc:
        problems.extend(f"{path}: {message}" for path, message in exc.errors)
    return problems
