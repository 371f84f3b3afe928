"""DeviceClass: a cluster-wide set of selectors and configuration that requests refer to by name."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from dra.model._base import K8sModel
from dra.model.meta import ObjectMeta
from dra.model.selector import DeviceSelector, OpaqueDeviceConfiguration

__all__ = ["DeviceClass", "DeviceClassConfiguration", "DeviceClassSpec"]


class DeviceClassConfiguration(K8sModel):
    """Configuration that applies to every device allocated through the class."""

    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClassSpec(K8sModel):
    """`selectors` must all match; `extendedResourceName` maps a pod extended resource onto the class."""

    selectors: list[DeviceSelector] | None = None
    config: list[DeviceClassConfiguration] | None = None
    extended_resource_name: str | None = None


class DeviceClass(K8sModel):
    """resource.k8s.io/v1 DeviceClass (cluster-scoped)."""

    api_version: Literal["resource.k8s.io/v1"] = "resource.k8s.io/v1"
    kind: Literal["DeviceClass"] = "DeviceClass"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: DeviceClassSpec = Field(default_factory=DeviceClassSpec)
