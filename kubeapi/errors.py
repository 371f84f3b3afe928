"""What a failed Kubernetes API call is, once: the errors a call through the `kubernetes` client raises, the HTTP
status they carry, and `ApiServerError`, which gpudra raises in their place with a message naming the call."""

from __future__ import annotations

from functools import cache

from dra.errors import GpudraError

__all__ = ["ApiServerError", "ApiServerUnanswered", "api_errors", "status_of"]


class ApiServerError(GpudraError):
    """The API server could not be reached in time or refused a side effect; the message says which."""


class ApiServerUnanswered(ApiServerError):
    """The call got no answer (a timeout, a refused or lost connection): asking again may succeed, unlike a call the
    API server answered with an error status."""


@cache
def api_errors() -> tuple[type[Exception], ...]:
    """The exceptions a call through the `kubernetes` client raises when the API server refuses it or cannot be
    reached: `ApiException` (an HTTP status), urllib3's errors (timeouts, connection and protocol failures) and
    `OSError` (sockets, TLS). Anything else out of a call is a bug and is left to propagate.

    A function, so that importing kubeapi does not import the client library: `except api_errors() as exc:`."""
    import urllib3
    from kubernetes.client.exceptions import OpenApiException

    return (OpenApiException, urllib3.exceptions.HTTPError, OSError)


def status_of(exc: BaseException) -> int | None:
    """The HTTP status an API error carries (`ApiException.status`), None for transport errors."""
    status = getattr(exc, "status", None)
    return status if isinstance(status, int) else None
