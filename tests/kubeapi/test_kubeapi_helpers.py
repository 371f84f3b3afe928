"""The kube adapter's shared pieces: what counts as an API error and its status, paging, backoff."""

from __future__ import annotations

import random
from typing import Any

import pytest
import urllib3
from kubernetes.client import V1ListMeta, V1PodList
from kubernetes.client.exceptions import ApiException

from kubeapi import Backoff, all_pages, api_errors, status_of


def test_api_errors_are_the_clients_and_transport_errors_only() -> None:
    errors = api_errors()
    for exc in (ApiException(status=404), urllib3.exceptions.ReadTimeoutError(None, "/", "timed out"), TimeoutError()):
        assert isinstance(exc, errors)
    assert not isinstance(KeyError("bug"), errors) and not isinstance(TypeError("bug"), errors)


def test_status_of_reads_the_http_status_and_nothing_else() -> None:
    assert status_of(ApiException(status=409)) == 409
    assert status_of(ConnectionError("refused")) is None
    odd = ApiException()
    odd.status = "409"  # type: ignore[assignment]  # not an int: not a status
    assert status_of(odd) is None


def test_all_pages_follows_continue_tokens_of_dict_pages() -> None:
    pages = {
        None: {"items": [1, 2], "metadata": {"continue": "a"}},
        "a": {"items": [3], "metadata": {"continue": "b"}},
        "b": {"items": [], "metadata": {"resourceVersion": "42"}},
    }
    asked: list[str | None] = []

    def fetch(token: str | None) -> dict[str, Any]:
        asked.append(token)
        return pages[token]

    assert all_pages(fetch) == ([1, 2, 3], "42")
    assert asked == [None, "a", "b"]


def test_all_pages_reads_model_pages() -> None:
    first = V1PodList(items=[], metadata=V1ListMeta(_continue="next", resource_version="1"))
    last = V1PodList(items=[], metadata=V1ListMeta(resource_version="7"))
    assert all_pages(lambda token: first if token is None else last) == ([], "7")


def test_all_pages_refuses_a_list_that_never_ends() -> None:
    with pytest.raises(RuntimeError, match="did not end after 3 pages"):
        all_pages(lambda token: {"items": [0], "metadata": {"continue": "again"}}, max_pages=3)


def test_all_pages_passes_an_expired_continue_token_error_through() -> None:
    def fetch(token: str | None) -> dict[str, Any]:
        if token is None:
            return {"items": [1], "metadata": {"continue": "old"}}
        raise ApiException(status=410, reason="Expired")

    with pytest.raises(ApiException) as info:
        all_pages(fetch)
    assert status_of(info.value) == 410


def test_backoff_doubles_to_its_cap_and_resets() -> None:
    backoff = Backoff(1.0, 5.0)
    assert [backoff.next() for _ in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    backoff.reset()
    assert backoff.next() == 1.0


def test_backoff_jitter_stays_within_its_spread() -> None:
    backoff = Backoff(10.0, 10.0, jitter=0.2, rng=random.Random(3))
    delays = [backoff.next() for _ in range(200)]
    assert all(8.0 <= d <= 12.0 for d in delays) and len(set(delays)) > 100


@pytest.mark.parametrize(("initial", "maximum", "jitter"), [(0, 1, 0), (2, 1, 0), (1, 2, 1.0)])
def test_backoff_refuses_nonsense(initial: float, maximum: float, jitter: float) -> None:
    with pytest.raises(ValueError):
        Backoff(initial, maximum, jitter)
