"""Issue 37's protocol attacks by a tenant, one test per row, through the real API server: benchmarks/tenant_attacks.py
in its smoke sizes against `gpudra serve` as manifests/base/deployment.yaml runs it (`--workers 2`), registered with
the shipped webhook configurations on the session's control plane.

Every test asserts states, not durations (the machine is shared): each ordinary GPU pod created through the API
server during the attack was admitted and translated, the server lived, its RSS stayed under the Deployment's memory
limit and came back near its level before the attack within 30 s (polled), plus what the row is about. The p99
ratios are printed (`-s`), and reported by the benchmark, not asserted.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.controlplane import binaries

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def _benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tenant_attacks", ROOT / "benchmarks" / "tenant_attacks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("tenant_attacks", module)
    spec.loader.exec_module(module)
    return module


BENCH = _benchmark()


@pytest.fixture(scope="module")
def attack(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Any]]:
    """`attack(name)` runs that attack's smoke size and returns its row (or, for forged reviews, its two rows)."""
    try:
        binaries.require("components")
    except binaries.MissingBinaries as exc:
        pytest.skip(str(exc))
    cp = request.getfixturevalue("control_plane")
    kube = request.getfixturevalue("kube")
    workdir = tmp_path_factory.mktemp("tenant-attacks")

    def run(name: str, decoy: bool = False) -> Any:
        row = BENCH.run([name], True, cp, kube, workdir / ("decoy" if decoy else ""), decoy=decoy)[name]
        print(f"\n{name}{' (decoy)' if decoy else ''}: {json.dumps(row, indent=1)}")
        return row

    yield run


def assert_ordinary_pods_unharmed(row: dict[str, Any]) -> None:
    """Every ordinary pod created during the attack (each one due while it ran) admitted and translated; the server
    alive; RSS under the limit and back within 30 s. Prints the p99 ratio the issue bounds at 2x (measured, not
    asserted: a shared machine)."""
    print(
        f"p99 {row['p99_ms_under_attack']} ms under attack / {row['p99_ms_baseline']} ms baseline = {row['p99_ratio']}"
        f" ({row['ordinary_pods_due_during_attack']} of {row['ordinary_pods']} ordinary pods due while it ran)"
    )
    assert row["through_apiserver"]
    assert row["ordinary_pods_due_during_attack"] == row["ordinary_pods"], "the attack ended before the ordinary pods"
    assert row["baseline_admitted"] == row["baseline_translated"] == row["ordinary_pods"], row
    assert (row["admitted"], row["translated"]) == (row["ordinary_pods"], row["ordinary_pods"]), (
        f"{row['ordinary_pods']} ordinary pods during the attack: {row['admitted']} admitted, {row['translated']} "
        f"translated; failures: {row['failures_under_attack']}"
    )
    assert row["server_alive"], "gpudra serve died or stopped answering /healthz during the attack"
    assert row["rss_mib_peak"] < row["rss_limit_mib"], (
        f"RSS peaked at {row['rss_mib_peak']} MiB, over the Deployment's {row['rss_limit_mib']} MiB limit"
    )
    assert row["rss_back_s"] is not None, (
        f"RSS {row['rss_mib_after_30s']} MiB 30 s after the attack, {row['rss_mib_before']} MiB before it"
    )


def assert_h2_refused(counts: dict[str, Any]) -> None:
    """The attack tried HTTP/2 both ways, and the server spoke it on none of its connections."""
    assert counts.get("attempts", 0) > 0, counts
    served = counts.get("served_h2_alpn", 0) + counts.get("served_h2_prior_knowledge", 0)
    assert served == 0, f"the server spoke HTTP/2 on {served} of {counts['attempts']} tenant connections: {counts}"
    assert counts.get("prior_knowledge_refused", 0) > 0, counts


def test_ping_and_settings_flood_over_http2(attack: Callable[[str], Any]) -> None:
    row = attack("h2_control_flood")
    assert_h2_refused(row["attack"])
    assert_ordinary_pods_unharmed(row)


def test_continuation_flood_with_a_held_stream(attack: Callable[[str], Any]) -> None:
    row = attack("continuation_flood")
    assert_h2_refused(row["attack"])
    assert_ordinary_pods_unharmed(row)


def test_idle_tls_handshakes_and_tcp_connections(attack: Callable[[str], Any]) -> None:
    row = attack("idle_connections")
    counts = row["attack"]
    # the attack was one: every round went past the 512 connections a worker takes, from 4 sources
    assert counts["rounds"] >= 1 and counts["tls_per_round"] + counts["tcp_per_round"] > 512, counts
    assert_ordinary_pods_unharmed(row)


def test_idle_connections_from_many_sources(attack: Callable[[str], Any]) -> None:
    """24 sources, each under a per-source cap, together past the 512 connections a worker takes."""
    row = attack("idle_connections_many_sources")
    assert row["attack"]["rounds"] >= 1 and row["attack"]["tls_per_round"] > 512, row["attack"]
    assert_ordinary_pods_unharmed(row)


def test_idle_connections_from_sources_that_had_a_review_answered(attack: Callable[[str], Any]) -> None:
    """Each source first has one harmless review answered (without --client-ca any tenant can), then idles."""
    row = attack("idle_connections_trusted_sources")
    assert row["attack"]["rounds"] >= 1, row["attack"]
    assert_ordinary_pods_unharmed(row)


def test_forged_reviews_from_tenant_pods_create_nothing_with_or_without_client_auth(
    attack: Callable[[str], Any],
) -> None:
    """Row 4: with --client-ca a review without the API server's certificate is refused; without it (the default
    install), a review from a tenant pod's address is refused by the review-source check (webhook.review_sources),
    and that source's next connections are reset at accept."""
    rows = attack("forged_reviews")
    with_ca, without_ca = rows["with_client_ca"], rows["without_client_ca"]
    assert with_ca["client_ca"] and not without_ca["client_ca"]
    for row in (with_ca, without_ca):
        counts = row["attack"]
        assert counts["templates_created_in_victim_namespace"] == 0, counts
        assert counts["answered_with_a_patch"] == 0, counts
        # 403 for each source's first review; a source refused that way has its next connections reset at accept
        # (smoke size: 20 reviews from 24 sources, each source's first)
        answers = counts["answers"]
        assert all(k == "403" or k.startswith("connection error") for k in answers), counts
        assert sum(answers.values()) == counts["forged_reviews"], counts
        assert answers.get("403", 0) >= min(counts["forged_reviews"], len(BENCH.tenant_sources(24))), counts
        assert_ordinary_pods_unharmed(row)


def test_nothing_is_read_after_a_refusal(attack: Callable[[str], Any]) -> None:
    row = attack("bytes_after_refusal")
    bound = row["attack"]["kernel_buffer_bytes_per_connection"]
    for way, counts in row["attack"].items():
        if not isinstance(counts, dict):
            continue
        assert counts["refused"] == counts["connections"], (way, counts)
        # aborted: the socket took no more than the two kernels buffer while nobody reads
        assert counts["bytes_sent_after_refusal"] <= counts["connections"] * bound, (
            f"{way}: {counts['bytes_sent_after_refusal']:,} bytes taken after the refusal over {counts['seconds']} s "
            f"({counts['connections']} connections; kernels buffer at most {bound:,} each): {counts}"
        )
    assert_ordinary_pods_unharmed(row)


def test_large_legitimate_reviews_wait_instead_of_503(attack: Callable[[str], Any]) -> None:
    """Every large review answered 200 with an AdmissionReview, none 503 for want of the byte budget, none allowed
    untranslated. A review the decision deadline cut short is denied (fail closed): that depends on the machine's
    load, not on the budget, so it is printed, not asserted."""
    row = attack("large_reviews")
    counts = row["attack"]
    print(f"large reviews: {counts['translated']} translated; 200 unpatched: {counts['answered_200_without_a_patch']}")
    assert counts["reviews"] >= BENCH.SMOKE_PARAMS["large_reviews"]["count"], counts
    assert counts["refused_503"] == 0, counts
    assert counts["answers"] == {"200": counts["reviews"]}, counts
    unpatched = counts["answered_200_without_a_patch"]
    assert "allowed, no patch" not in unpatched and "not an AdmissionReview" not in unpatched, counts
    assert counts["translated"] + sum(unpatched.values()) == counts["reviews"], counts
    assert_ordinary_pods_unharmed(row)


def test_large_reviews_aimed_at_a_decoy(attack: Callable[..., Any]) -> None:
    """`--decoy`: the same attack on a second gpudra serve the API server does not call, which answers all of it
    while the ordinary pods go through the stack's webhook (the floor the attack's CPU alone sets)."""
    row = attack("large_reviews", decoy=True)
    counts = row["attack"]
    assert row["decoy"] and row["decoy_server_alive"], row
    assert counts["answers"] == {"200": counts["reviews"]}, counts
    assert_ordinary_pods_unharmed(row)


def test_half_sent_bodies(attack: Callable[[str], Any]) -> None:
    row = attack("half_sent_bodies")
    print(
        f"RSS added by {row['attack']['clients']} half-sent bodies: {row['rss_mib_peak'] - row['rss_mib_before']} MiB"
    )
    assert (
        row["attack"].get("half sent", 0) + sum(v for k, v in row["attack"].items() if k.startswith("refused"))
        == row["attack"]["clients"]
    ), row["attack"]
    # Through the API server the bodies are refused (403) and reset as fast as they come: the heap trim counts the
    # connections that ended, not the table's size, so what they left goes back (webhook.heap_trim).
    assert_ordinary_pods_unharmed(row)


def test_bad_requests_do_not_flood_the_log(attack: Callable[[str], Any]) -> None:
    row = attack("log_flood")
    print(f"log: {row['log_bytes_per_s_under_attack']} B/s under attack, {row['log_bytes_per_s_baseline']} B/s before")
    assert sum(row["attack"]["requests"].values()) > 0
    assert row["log_tracebacks_under_attack"] == 0, "bad requests logged tracebacks"
    assert_ordinary_pods_unharmed(row)
