"""Pieces shared by DeviceClass and ResourceClaim: CEL device selectors, opaque driver configuration, tolerations."""

from __future__ import annotations

from typing import Any

from dra.model._base import K8sModel

__all__ = ["CELDeviceSelector", "DeviceSelector", "DeviceToleration", "OpaqueDeviceConfiguration"]


class CELDeviceSelector(K8sModel):
    """A CEL expression over the `device` variable that must evaluate to true."""

    expression: str = ""


class DeviceSelector(K8sModel):
    """One selector; `cel` is the only kind in resource.k8s.io/v1."""

    cel: CELDeviceSelector | None = None

    @classmethod
    def of(cls, expression: str) -> DeviceSelector:
        """`DeviceSelector(cel=CELDeviceSelector(expression=...))`."""
        return cls(cel=CELDeviceSelector(expression=expression))


class OpaqueDeviceConfiguration(K8sModel):
    """Driver-specific parameters (a `runtime.RawExtension`, usually an object with apiVersion and kind)."""

    driver: str = ""
    parameters: Any = None


class DeviceToleration(K8sModel):
    """Tolerates device taints: `operator` is Exists or Equal (the default), `effect` empty matches all."""

    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = None
