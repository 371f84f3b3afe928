"""Kubernetes name formats (k8s.io/apimachinery util/validation), for packages outside `dra`: the public face of
`dra._names`, which `dra.model` validates with."""

from __future__ import annotations

from dra._names import DNS1123_LABEL_MAX, DNS1123_SUBDOMAIN_MAX, is_dns1123_label, is_dns1123_subdomain

__all__ = ["DNS1123_LABEL_MAX", "DNS1123_SUBDOMAIN_MAX", "is_dns1123_label", "is_dns1123_subdomain"]
