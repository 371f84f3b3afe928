from tests.prometheus.fixtures import prometheus_factory  # noqa: F401 (a fixture)
