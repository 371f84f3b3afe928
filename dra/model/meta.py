"""Shared Kubernetes types the DRA objects embed: ObjectMeta, core/v1 NodeSelector, metav1.Condition.

Timestamps stay strings (RFC 3339 as the API server writes them) so that objects round-trip unchanged.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from dra.model._base import K8sModel

__all__ = [
    "Condition",
    "NodeSelector",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "ObjectMeta",
    "OwnerReference",
]


def _timestamp_text(value: object) -> object:
    # PyYAML's default loaders turn an unquoted RFC 3339 time into a datetime; the API's JSON form is the text.
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return value.isoformat(timespec="seconds" if not value.microsecond else "microseconds") + "Z"
    return value


Timestamp = Annotated[str, BeforeValidator(_timestamp_text)]
"""metav1.Time as its RFC 3339 text (a `datetime` is accepted and written as UTC `...Z`)."""


class OwnerReference(K8sModel):
    """metav1.OwnerReference."""

    api_version: str | None = None
    kind: str | None = None
    name: str | None = None
    uid: str | None = None
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(K8sModel):
    """metav1.ObjectMeta; fields gpudra does not read (managedFields, ...) are kept as unknown fields."""

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    self_link: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: Timestamp | None = None
    deletion_timestamp: Timestamp | None = None
    deletion_grace_period_seconds: int | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[OwnerReference] | None = None
    finalizers: list[str] | None = None
    managed_fields: list[dict[str, Any]] | None = None


class NodeSelectorRequirement(K8sModel):
    """core/v1 NodeSelectorRequirement: `key`, `operator` (In, NotIn, Exists, DoesNotExist, Gt, Lt), `values`."""

    key: str = ""
    operator: str = ""
    values: list[str] | None = None


class NodeSelectorTerm(K8sModel):
    """core/v1 NodeSelectorTerm: requirements ANDed together."""

    match_expressions: list[NodeSelectorRequirement] | None = None
    match_fields: list[NodeSelectorRequirement] | None = None


class NodeSelector(K8sModel):
    """core/v1 NodeSelector: terms ORed together."""

    node_selector_terms: list[NodeSelectorTerm] = Field(default_factory=list)


class Condition(K8sModel):
    """metav1.Condition."""

    type: str = ""
    status: str = ""
    observed_generation: int | None = None
    last_transition_time: Timestamp | None = None
    reason: str | None = None
    message: str | None = None
