"""`benchmarks/webhook_reliability.py` against a real `gpudra serve` over HTTPS: issue 12's hostile corpus and a few
random mutations get no 5xx, hang or crash, and never leave a GPU pod untranslated afterwards."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from webhook_reliability import _Client, _corpus, _mutations, _Server, hostile, slow_neighbour  # noqa: E402


def test_the_hostile_corpus_gets_answers_never_failures() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = _Server(Path(tmp))
        try:
            client = _Client(server.port, server.ctx, timeout=15.0)
            out = hostile(client, server, _corpus() + _mutations(20, seed=1))
            (neighbour,) = slow_neighbour(client, normal=20, concurrency=4, rounds=1)["rounds"]
        finally:
            server.stop()
    assert out["crashes"] == [] and out["alive_after_a_client_hung_up"]
    assert out["pods_admitted_untranslated"] == 0
    assert set(out["answers"]) <= {"2xx allowed", "2xx denied", "4xx"}, out["answers"]  # no 5xx, hang or error
    assert out["by_input"]["JSON nested 10,000 deep"] == {"4xx": 2}
    assert out["by_input"]["nvidia.com/gpu: 1180591620717411303424"] == {"2xx denied": 2}
    assert neighbour["alone"]["not_translated"] == neighbour["beside_a_slow_review"]["not_translated"] == 0
    assert set(neighbour["beside_a_slow_review"]["slow_review"]["answers"]) == {"2xx"}
