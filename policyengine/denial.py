"""The verdict that rejects a pod: raised by the policy engine, answered by the webhook as an AdmissionReview."""

from __future__ import annotations

from dra.errors import GpudraError

__all__ = ["AdmissionDenied"]


class AdmissionDenied(GpudraError):
    """A policy verdict: the pod is rejected with `message` and HTTP-like `code` in the review status."""

    def __init__(self, message: str, *, code: int = 403, reason: str = "Forbidden", warnings: list[str] | None = None):
        self.message = message
        self.code = code
        self.reason = reason
        self.warnings = list(warnings or [])
        super().__init__(message)
