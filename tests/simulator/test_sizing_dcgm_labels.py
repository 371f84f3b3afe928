"""`--sizing observed:FILE` reads a dump's series labels with the recommender's reader (recommender's
`series_identity`): the same fallbacks, the same refusals."""

from __future__ import annotations

from typing import Any

import pytest

from dra.errors import InputError
from recommender import DeviceSeries, series_identity
from simulator.sizing import parse_prometheus_dump

MIB = 2**20
SAMPLES = [[1_700_000_000 + 30 * i, "4096"] for i in range(120)]


def _dump(metric: dict[str, str]) -> dict[str, Any]:
    series = {"metric": {"__name__": "DCGM_FI_DEV_FB_USED", **metric}, "values": SAMPLES}
    return {"status": "success", "data": {"resultType": "matrix", "result": [series]}}


@pytest.mark.parametrize(
    "metric",
    [
        {"namespace": "team-b", "pod": "embed-7c9d8f6b5-aaaaa", "container": "main"},
        {"pod_namespace": "team-b", "pod_name": "embed-7c9d8f6b5-aaaaa", "container_name": "main"},
        {"exported_namespace": "team-b", "exported_pod": "embed-7c9d8f6b5-aaaaa", "exported_container": "main",
         "namespace": "gpu-operator", "pod": "nvidia-dcgm-exporter-x7k2p", "container": "nvidia-dcgm-exporter"},
        {"pod_namespace": "team-b", "pod_name": "embed-7c9d8f6b5-aaaaa", "container_name": "main",
         "namespace": "gpu-operator", "pod": "nvidia-dcgm-exporter-x7k2p", "container": "nvidia-dcgm-exporter"},
    ],
    ids=["exporter", "old-names", "exported", "old-names-with-target-labels"],
)  # fmt: skip
def test_the_simulator_keys_a_series_as_the_recommender_does(metric: dict[str, str]) -> None:
    ident = series_identity(metric)
    assert isinstance(ident, DeviceSeries) and (ident.namespace, ident.container) == ("team-b", "main")
    lookup = parse_prometheus_dump(_dump(metric), "dump.json")
    found = lookup.observed("team-b", "Deployment", "embed", "main")
    assert found is not None and found.peak_bytes == 4096 * MIB
    assert lookup.describe()["owners"] == 1


@pytest.mark.parametrize(
    ("metric", "message"),
    [
        ({"namespace": "team-b", "pod": "embed-7c9d8f6b5-aaaaa", "container": "c" * 100}, "invalid container"),
        ({"namespace": "../kube-system", "pod": "embed-7c9d8f6b5-aaaaa", "container": "main"}, "'../kube-system'"),
    ],
)
def test_a_label_that_is_not_a_kubernetes_name_is_an_error_naming_the_series(
    metric: dict[str, str], message: str
) -> None:
    with pytest.raises(InputError, match=rf"dump.json: data.result\[0\]: series .*{message}"):
        parse_prometheus_dump(_dump(metric), "dump.json")
