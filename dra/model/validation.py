"""Create-time validation of resource.k8s.io/v1 objects as k8s.io/kubernetes pkg/apis/resource/validation does it.

`validate(obj)` returns (field path, message) pairs in upstream form (`spec.devices[3].name`, `Invalid value: "x":
...`). Rules that need the cluster (pool-wide counter-set names, feature gates) or an old object (immutability) are
out of scope; CEL selectors are compiled with `dra.cel` (the cost estimate upstream also applies is not).
"""

from __future__ import annotations

from dra._names import is_qualified_name
from dra.model._base import K8sModel
from dra.model._claimvalidation import (
    _claim_spec,
    _claim_status,
    _RequestNames,
)
from dra.model._corevalidation import (
    name_is_dns_subdomain,
    validate_object_meta,
    validate_pod,
    validate_template_object_meta,
)
from dra.model._fields import Errors, Path
from dra.model._rules import (
    _L,
    _opaque,
    _selectors,
    _slice,
)
from dra.model._slicevalidation import _device, _slice_spec
from dra.model.claim import (
    ResourceClaim,
    ResourceClaimSpec,
    ResourceClaimTemplate,
)
from dra.model.deviceclass import DeviceClass
from dra.model.limits import LIMITS
from dra.model.pod import Pod
from dra.model.slice import (
    Device,
    ResourceSlice,
    ResourceSliceSpec,
)

__all__ = ["LIMITS", "validate"]


def _extended_resource_name(name: str) -> bool:
    """v1helper.IsExtendedResourceName."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return not is_qualified_name("requests." + name)


def _device_class(errs: Errors, dc: DeviceClass) -> None:
    validate_object_meta(errs, dc.metadata, namespaced=False, name_check=name_is_dns_subdomain, path=Path("metadata"))
    spec = Path("spec")
    _selectors(errs, dc.spec.selectors, spec.child("selectors"))
    _slice(
        errs, dc.spec.config, _L["DeviceConfigMaxSize"], lambda c, p: _opaque(errs, c.opaque, p), spec.child("config")
    )
    name = dc.spec.extended_resource_name
    if name is not None and not _extended_resource_name(name):
        errs.invalid(
            spec.child("extendedResourceName"),
            name,
            "a name must be a domain-prefixed path, such as 'example.com/my-prop'",  # declarative format, 1.37
        )


def _resource_claim(errs: Errors, claim: ResourceClaim) -> None:
    validate_object_meta(errs, claim.metadata, namespaced=True, name_check=name_is_dns_subdomain, path=Path("metadata"))
    _claim_spec(errs, claim.spec, Path("spec"))
    if claim.status is not None:
        _claim_status(errs, claim.status, Path("status"), _RequestNames(claim.spec.devices))


def _resource_claim_template(errs: Errors, template: ResourceClaimTemplate) -> None:
    validate_object_meta(
        errs, template.metadata, namespaced=True, name_check=name_is_dns_subdomain, path=Path("metadata")
    )
    if template.spec.metadata is not None:
        validate_template_object_meta(errs, template.spec.metadata, Path("spec").child("metadata"))
    _claim_spec(errs, template.spec.spec, Path("spec").child("spec"))


def _resource_slice(errs: Errors, sl: ResourceSlice) -> None:
    validate_object_meta(errs, sl.metadata, namespaced=False, name_check=name_is_dns_subdomain, path=Path("metadata"))
    _slice_spec(errs, sl.spec, Path("spec"))


def validate(obj: K8sModel) -> list[tuple[str, str]]:
    """The errors the API server would report when creating `obj`.

    `obj` is a top-level object (paths from its root: `spec.devices[0].name`) or a `ResourceClaimSpec`,
    `ResourceSliceSpec` or `Device` on its own (paths relative to it: `devices.requests[0].name`).
    """
    errs = Errors()
    if isinstance(obj, DeviceClass):
        _device_class(errs, obj)
    elif isinstance(obj, ResourceClaim):
        _resource_claim(errs, obj)
    elif isinstance(obj, ResourceClaimTemplate):
        _resource_claim_template(errs, obj)
    elif isinstance(obj, ResourceSlice):
        _resource_slice(errs, obj)
    elif isinstance(obj, Pod):
        validate_pod(errs, obj)
    elif isinstance(obj, ResourceClaimSpec):
        _claim_spec(errs, obj, Path())
    elif isinstance(obj, ResourceSliceSpec):
        _slice_spec(errs, obj, Path())
    elif isinstance(obj, Device):
        _device(errs, obj, Path(), per_device=False)
    else:
        raise TypeError(f"no validation for {type(obj).__name__}")
    return errs.items
