"""What names a `GPUClaimPolicy` document and marks a CEL value in it, without the pydantic models (`model.py`),
which a load of files verified before never needs."""

from __future__ import annotations

from typing import Any

__all__ = ["API_VERSION", "KIND", "is_expression"]

API_VERSION = "gpudra.io/v1alpha1"
KIND = "GPUClaimPolicy"


def is_expression(value: Any) -> bool:
    """True when `value` is the policy-CEL form: a mapping with the single key `expression`."""
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get("expression"), str)
