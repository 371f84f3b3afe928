"""`--scheduler-config`: a KubeSchedulerConfiguration read as kube-scheduler reads it, bad input named by field."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from dra.errors import InputError
from gpudra.cli import app
from simulator.scheduling import DEFAULT_PROFILE, load_scheduler_config

HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "scheduler.yaml"
    path.write_text(HEAD + body)
    return path


def test_most_allocated_with_weights(tmp_path: Path) -> None:
    profile = load_scheduler_config(
        _write(
            tmp_path,
            """
percentageOfNodesToScore: 20
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      disabled: [{name: NodeResourcesBalancedAllocation}]
      enabled: [{name: NodeResourcesFit, weight: 5}]
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources: [{name: cpu, weight: 1}, {name: memory, weight: 3}]
- schedulerName: other
  plugins: {multiPoint: {disabled: [{name: '*'}]}}
""",
        )
    )
    assert profile.fit.type == "MostAllocated" and profile.fit.resources == (("cpu", 1), ("memory", 3))
    assert profile.weight("NodeResourcesFit") == 5 and profile.weight("NodeResourcesBalancedAllocation") == 0
    assert profile.weight("DynamicResources") == 2 and profile.percentage_of_nodes_to_score == 20


def test_defaults_and_inert_plugins(tmp_path: Path) -> None:
    profile = load_scheduler_config(
        _write(
            tmp_path,
            """
profiles:
- plugins:
    multiPoint:
      disabled: [{name: ImageLocality}, {name: VolumeBinding}, {name: InterPodAffinity}]
""",
        )
    )
    assert profile.weights == DEFAULT_PROFILE.weights and profile.fit == DEFAULT_PROFILE.fit


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "profiles: [{plugins: {score: {enabled: [{name: NodeResourcesFitt}]}}}]",
            "profiles[0].plugins.score.enabled[0].name: unknown plugin 'NodeResourcesFitt' "
            "(did you mean NodeResourcesFit?)",
        ),
        (
            "profiles: [{plugins: {score: {enabled: [{name: NodeResourcesFit, weight: 0}]}}}]",
            "profiles[0].plugins.score.enabled[0].weight: 0 is not a weight",
        ),
        (
            "profiles: [{pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {resources: "
            "[{name: cpu, weight: 0}]}}}]}]",
            "scoringStrategy.resources[0].weight: 0 is not a weight",
        ),
        (
            "profiles: [{pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {type: Tightest}}}]}]",
            "scoringStrategy.type: must be one of",
        ),
        ("profiles: [{schedulerName: gpu}]", "profiles: no profile named default-scheduler"),
        ("extenders: [{urlPrefix: 'http://x'}]", "extenders: the simulator cannot model"),
        (
            "profiles: [{plugins: {multiPoint: {enabled: [{name: CapacityScheduling}]}}}]",
            "unknown plugin 'CapacityScheduling'",
        ),
        (
            "profiles: [{pluginConfig: [{name: PodTopologySpread, args: {defaultConstraints: "
            "[{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]}}]}]",
            "cannot model topology",
        ),
        ("profiles: [{plugins: {filter: {disabled: [{name: DynamicResources}]}}}]", "DynamicResources must stay"),
        ("profile: []", "profile: unknown field"),
    ],
)
def test_bad_configs_name_the_field(tmp_path: Path, body: str, message: str) -> None:
    path = _write(tmp_path, body)
    with pytest.raises(InputError) as caught:
        load_scheduler_config(path)
    assert message in str(caught.value) and str(path) in str(caught.value)


def test_unknown_api_version(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n")
    with pytest.raises(InputError, match=r"apiVersion: must be kubescheduler.config.k8s.io/v1"):
        load_scheduler_config(path)


def test_cli_uses_the_config_and_reports_bad_ones(tmp_path: Path) -> None:
    good = _write(tmp_path, "profiles: [{pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: "
                  "{type: MostAllocated}}}]}]\n")  # fmt: skip
    args = ["simulate", "--strategies", "dra-whole", "--scheduler-config", str(good), "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert '"type": "MostAllocated"' in result.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text(HEAD + "profiles: [{plugins: {score: {enabled: [{name: Typo}]}}}]\n")
    result = CliRunner().invoke(app, ["simulate", "--scheduler-config", str(bad)])
    assert result.exit_code == 2 and "unknown plugin 'Typo'" in result.output


def test_upstream_is_the_default_device_choice_and_scored_is_labelled_a_what_if() -> None:
    from simulator.comparison import SimulationConfig, simulate
    from simulator.traces import GeneratorConfig

    small = GeneratorConfig(pods=40, seed=1)
    plain = simulate(SimulationConfig(strategies=("gpudra",), generator=small)).summary()["input"]
    assert plain["allocator_mode"] == "upstream" and plain["strategy_details"]["gpudra"]["mode"] == "upstream"
    assert plain["scheduler"]["score_weights"]["DynamicResources"] == 2
    scored = simulate(SimulationConfig(strategies=("gpudra",), generator=small, allocator_mode="scored")).summary()
    assert "what-if" in scored["input"]["allocator_mode"]
    assert "what-if" in scored["input"]["strategy_details"]["gpudra"]["mode"]
