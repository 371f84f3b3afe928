"""The one module that reaches into uvicorn's internals: its httptools HTTP/1.1 protocol and its logging set-up.

uvicorn serves the webhook's HTTP/1.1, and `webhook.connections` extends its protocol class (TLS started by the
gate, header deadlines, aborts). What that subclass relies on beyond uvicorn's public `run()` is named here and
nowhere else; pyproject pins uvicorn to the range these were read in, and tests/webhook/test_uvicorn_internals.py
fails when one of them moves.
"""

from __future__ import annotations

from typing import Any

from uvicorn.config import LOGGING_CONFIG
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["LOGGING_CONFIG", "PROTOCOL_ATTRIBUTES", "PROTOCOL_METHODS", "HttpToolsProtocol", "logging_config"]

# What webhook.connections reads or overrides on HttpToolsProtocol (checked by the test above).
PROTOCOL_METHODS = (
    "connection_made",
    "connection_lost",
    "data_received",
    "on_message_begin",
    "on_headers_complete",
    "on_response_complete",
    "send_400_response",
    "pause_writing",
    "resume_writing",
)
PROTOCOL_ATTRIBUTES = (
    "app", "app_state", "loop", "transport", "cycle", "pipeline", "timeout_keep_alive", "timeout_keep_alive_task",
    "logger",
)  # fmt: skip


def logging_config() -> dict[str, Any]:
    """A deep copy of uvicorn's logging configuration, for `gpudra serve` to extend."""
    import copy

    return copy.deepcopy(LOGGING_CONFIG)
