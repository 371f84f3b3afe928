"""The `GPUClaimPolicy` document (apiVersion gpudra.io/v1alpha1) as pydantic models.

The shape follows Kubernetes ValidatingAdmissionPolicy / MutatingAdmissionPolicy. Inside `spec.claim` any field
may be a literal or a CEL expression; a value is CEL exactly when it is a mapping whose only key is
`expression` (`count: {expression: "legacy['nvidia.com/gpu']"}`), everything else is taken literally.
Device selectors are written as the DRA selector's CEL text (a string), not as `{cel: {expression: ...}}`.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ._form import API_VERSION, KIND, is_expression

__all__ = [
    "API_VERSION",
    "KIND",
    "ClaimConfig",
    "ClaimConstraint",
    "ClaimSpec",
    "Expression",
    "GPUClaimPolicy",
    "MatchCondition",
    "NamedExpression",
    "OpaqueConfig",
    "PolicyMetadata",
    "PolicySpec",
    "SubRequest",
    "Validation",
    "WarningRule",
    "is_expression",
]

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_QUALIFIED = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class Expression(_Strict):
    """A CEL expression in the admission environment (plus `gpu`, and `container`/`legacy` in claims)."""

    expression: str = Field(min_length=1)


class NamedExpression(_Strict):
    """A `variables` entry; names are C identifiers so `variables.<name>` parses."""

    name: str
    expression: str = Field(min_length=1)

    @field_validator("name")
    @classmethod
    def _identifier(cls, name: str) -> str:
        if not _C_IDENTIFIER.match(name):
            raise ValueError(f"variable name must be a C identifier (letters, digits, '_'; got {name!r})")
        return name


class MatchCondition(_Strict):
    """All of a policy's match conditions must be true for it to apply; names are qualified names as in VAP."""

    name: str
    expression: str = Field(min_length=1)

    @field_validator("name")
    @classmethod
    def _qualified(cls, name: str) -> str:
        if len(name) > 63 or not _QUALIFIED.match(name):
            raise ValueError(f"match condition name must be a qualified name (got {name!r})")
        return name


class Validation(_Strict):
    """Deny (enforce) or record (audit) when `expression` is false; the message says why."""

    expression: str = Field(min_length=1)
    message: str | None = None
    messageExpression: str | None = None
    reason: Literal["Unauthorized", "Forbidden", "Invalid", "RequestEntityTooLarge"] = "Invalid"


class WarningRule(_Strict):
    """Like a validation, but a false `expression` only adds a warning to the admission response."""

    expression: str = Field(min_length=1)
    message: str | None = None
    messageExpression: str | None = None

    @model_validator(mode="after")
    def _has_message(self) -> WarningRule:
        if self.message is None and self.messageExpression is None:
            raise ValueError("a warning needs 'message' or 'messageExpression'")
        return self


Value = Any  # a literal, or an {expression: ...} mapping (see `is_expression`)
StrOrExpr = str | Expression
SelectorList = list[StrOrExpr] | Expression
IntOrExpr = int | Expression


class SubRequest(_Strict):
    """One `firstAvailable` alternative, tried in order; `name` is a DNS label unique in its request."""

    name: str
    deviceClassName: StrOrExpr
    selectors: SelectorList | None = None
    count: IntOrExpr | None = None
    allocationMode: Literal["ExactCount", "All"] | Expression | None = None
    capacity: dict[str, Value] | Expression | None = None
    tolerations: list[Value] | Expression | None = None

    @field_validator("name")
    @classmethod
    def _dns_label(cls, name: str) -> str:
        if len(name) > 63 or not _DNS_LABEL.match(name):
            raise ValueError(f"subrequest name must be a DNS label (got {name!r})")
        return name


class ClaimConstraint(_Strict):
    """`matchAttribute` / `distinctAttribute`; `requests` names subrequests of this container's request."""

    requests: list[str] | Expression | None = None
    matchAttribute: StrOrExpr | None = None
    distinctAttribute: StrOrExpr | None = None

    @model_validator(mode="after")
    def _one_of(self) -> ClaimConstraint:
        if (self.matchAttribute is None) == (self.distinctAttribute is None):
            raise ValueError("a constraint needs exactly one of matchAttribute, distinctAttribute")
        return self


class OpaqueConfig(_Strict):
    driver: StrOrExpr
    parameters: Value


class ClaimConfig(_Strict):
    """Opaque driver configuration (MPS, time-slicing) for this container's request or some subrequests."""

    requests: list[str] | Expression | None = None
    opaque: OpaqueConfig | Expression


class ClaimSpec(_Strict):
    """The DRA request built for each container holding legacy GPU resources (one request per container)."""

    variables: list[NamedExpression] = Field(default_factory=list)
    deviceClassName: StrOrExpr | None = None
    selectors: SelectorList | None = None
    count: IntOrExpr | None = None
    allocationMode: Literal["ExactCount", "All"] | Expression | None = None
    capacity: dict[str, Value] | Expression | None = None
    tolerations: list[Value] | Expression | None = None
    adminAccess: bool | Expression | None = None
    firstAvailable: list[SubRequest] | Expression | None = None
    constraints: list[ClaimConstraint] | Expression = Field(default_factory=list)
    config: list[ClaimConfig] | Expression = Field(default_factory=list)

    @model_validator(mode="after")
    def _exactly_or_first_available(self) -> ClaimSpec:
        exact = self.deviceClassName is not None
        if exact == (self.firstAvailable is not None):
            raise ValueError("a claim needs exactly one of deviceClassName (one kind of device) or firstAvailable")
        if not exact:
            for name in ("selectors", "count", "allocationMode", "capacity", "tolerations", "adminAccess"):
                if getattr(self, name) is not None:
                    raise ValueError(f"'{name}' belongs inside each firstAvailable alternative, not beside it")
        return self


class PolicyMetadata(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    name: str
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _dns_name(cls, name: str) -> str:
        if len(name) > 63 or not _DNS_LABEL.match(name):
            raise ValueError(f"policy name must be a DNS label (got {name!r})")
        return name


class PolicySpec(_Strict):
    mode: Literal["enforce", "audit"] = "enforce"
    priority: int = 0
    failurePolicy: Literal["Fail", "Ignore"] = "Fail"
    # Where the cluster maps the legacy resource to a DeviceClass (KEP-5004) and this policy's claim asks for nothing
    # but whole devices of that class, as kube-scheduler's own claim would: LeaveToScheduler admits the pod
    # unchanged (no template, no patch); Translate gives it gpudra's claim anyway (policyengine.scheduler_path).
    extendedResourceMapping: Literal["LeaveToScheduler", "Translate"] = "LeaveToScheduler"
    # A claim no device can satisfy (dra.shapes: the cluster's shapes in the webhook, the catalog or a slice dump in the
    # CLI): Deny refuses the pod naming the evidence; Warn admits the claim with a warning (it stays Pending);
    # LeaveUnchanged admits the pod untranslated, with a warning. In audit mode nothing is refused: it is recorded.
    onUnsatisfiable: Literal["Deny", "Warn", "LeaveUnchanged"] = "Deny"
    params: dict[str, Any] = Field(default_factory=dict)
    matchConditions: list[MatchCondition] = Field(default_factory=list)
    variables: list[NamedExpression] = Field(default_factory=list)
    claim: ClaimSpec | None = None
    validations: list[Validation] = Field(default_factory=list)
    warnings: list[WarningRule] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_names(self) -> PolicySpec:
        named: tuple[tuple[str, list[MatchCondition] | list[NamedExpression]], ...] = (
            ("matchConditions", self.matchConditions),
            ("variables", self.variables),
        )
        for what, entries in named:
            seen: set[str] = set()
            for entry in entries:
                if entry.name in seen:
                    raise ValueError(f"duplicate {what} name {entry.name!r}")
                seen.add(entry.name)
        if self.claim is not None:
            pod_level = {v.name for v in self.variables}
            for variable in self.claim.variables:
                if variable.name in pod_level:
                    raise ValueError(f"claim variable {variable.name!r} shadows spec.variables.{variable.name}")
        return self


class GPUClaimPolicy(_Strict):
    """One policy document."""

    apiVersion: Literal["gpudra.io/v1alpha1"]
    kind: Literal["GPUClaimPolicy"]
    metadata: PolicyMetadata
    spec: PolicySpec
