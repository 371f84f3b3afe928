"""What webhook.connections relies on inside uvicorn is still there: this fails when a release moves it."""

from __future__ import annotations

import asyncio
import inspect
from importlib.metadata import version

from uvicorn.config import Config
from uvicorn.server import ServerState

from webhook._uvicorn import PROTOCOL_ATTRIBUTES, PROTOCOL_METHODS, HttpToolsProtocol, logging_config


async def _app(scope: object, receive: object, send: object) -> None:  # pragma: no cover - never called
    raise AssertionError("not called")


def test_the_protocol_methods_webhook_connections_overrides_exist_with_their_signatures() -> None:
    for name in PROTOCOL_METHODS:
        assert callable(getattr(HttpToolsProtocol, name, None)), f"uvicorn's HttpToolsProtocol lost {name}()"
    params = {name: list(inspect.signature(getattr(HttpToolsProtocol, name)).parameters) for name in PROTOCOL_METHODS}
    assert params["connection_made"] == ["self", "transport"]
    assert params["connection_lost"] == ["self", "exc"]
    assert params["data_received"] == ["self", "data"]
    assert params["send_400_response"] == ["self", "msg"]
    # webhook.connections reads the lifespan state from the constructor's keywords, before running it
    init = inspect.signature(HttpToolsProtocol.__init__).parameters
    assert init["app_state"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD


def test_the_protocol_attributes_webhook_connections_reads_are_set_per_connection() -> None:
    async def make() -> HttpToolsProtocol:
        config = Config(app=_app, timeout_keep_alive=7)
        config.load()
        return HttpToolsProtocol(config=config, server_state=ServerState(), app_state={"k": 1})

    protocol = asyncio.run(make())
    for name in PROTOCOL_ATTRIBUTES:
        assert hasattr(protocol, name), f"uvicorn's HttpToolsProtocol no longer sets .{name}"
    assert protocol.timeout_keep_alive == 7 and protocol.app_state == {"k": 1}


def test_uvicorn_is_in_the_pinned_range_and_its_logging_config_has_a_default_handler() -> None:
    major, minor = (int(part) for part in version("uvicorn").split(".")[:2])
    assert (0, 40) <= (major, minor) < (0, 56)
    config = logging_config()
    assert "default" in config["handlers"] and "uvicorn.error" in config["loggers"]
    assert config is not logging_config()  # a copy each time: serve's additions never leak into uvicorn's
