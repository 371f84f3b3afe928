"""No regression against the device plugin (issue 39 point 4; DESIGN: "Claims shaped by the cluster").

The property, over generated pods and generated nodes: whenever a legacy pod fits a node under the device plugin's
semantics and its size evidence fits that node's GPUs, the claim gpudra builds for it (the shipped policies, checked
against that node's device shapes with `ClaimCheck`, translated by `policyengine.translate`) allocates on that node's
driver-shaped ResourceSlices with `dra.allocator` (upstream mode).

- Nodes: every catalog model (`dra.gpus`), 1 GPU up to its usual count, every driver release; MIG none, dynamic
  (where the release and model have it) or static: the first GPUs in one of the model's maximal layouts, under the
  device plugin's migStrategy mixed (the GPUs with MIG off are `nvidia.com/gpu`, each MIG device an
  `nvidia.com/mig-<profile>`) or single (every GPU in one profile, each MIG device an `nvidia.com/gpu`); on driver
  0.5 the gates ConsumableShares (memory, unlimited, N shares) and FabricManagerPartitioning; gpudra's NVLink
  attribute or not.
- Fits under device-plugin semantics: per resource, the pod's effective request as the kubelet's device manager (and
  the scheduler's NodeResourcesFit) counts it: app containers and restartable sidecars add, a plain init container's
  devices are reused by the containers after it; at most what the node advertises.
- Size evidence that fits: a `gpudra.io/vram` annotation, or else a vLLM command line's model estimate (`dra.sizing`,
  `--gpu-memory-utilization` included), at most the memory the driver publishes for the devices the pod asks for; or
  no evidence at all.
- The namespace carries no guardrail label: a cap is gpudra's own refusal, which the device plugin has no word for.

Nodes under migStrategy single are judged with the policies as `gpudra migrate --device-plugin-config` leaves them
for such a cluster (mig-single's `migStrategySingle: true`). Every other generated pod (the device plugin would not
run it there) is refused with a reason or allocates: never admitted with a claim that cannot allocate (the check's own
invariant). Without the claim check the property fails (`test_without_the_claim_check_pods_are_stranded`): the
policies alone, as on main before cd6a283, admit claims that stay Pending, a pod the device plugin runs among them.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, event, find, given, settings
from hypothesis import strategies as st

from dra.allocator import Allocator, FeatureSet, Unsatisfiable
from dra.gpus import (
    DEFAULT_DRIVER_RELEASE,
    DRIVER_RELEASES,
    MigMode,
    Placement,
    all_models,
    device_classes,
    driver_shape,
    get,
    node_resource_slices,
    parse_driver_gates,
    synthetic_node,
)
from dra.quantity import Quantity
from dra.shapes import DeviceShapes, fold_shapes
from dra.sizing import estimate_memory, parse_container
from policyengine import ClaimCheck, PolicySet, load_policies, shipped_policies_dir
from policyengine.device_plugin import migration, read_configs
from policyengine.translate import translate

MODELS = {m.key: m for m in all_models()}
MIB = 2**20
GPU = "nvidia.com/gpu"
NAMESPACE: dict[str, Any] = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}
# vLLM models the sizing catalog knows, small to large (the estimate decides which fit a node).
VLLM_MODELS = (
    "Qwen/Qwen2.5-0.5B-Instruct",
    "meta-llama/Llama-3.2-1B-Instruct",
    "meta-llama/Llama-3.1-8B-Instruct",
    "mistralai/Mistral-7B-Instruct-v0.2",
    "Qwen/Qwen2.5-14B-Instruct",
    "google/gemma-2-27b-it",
    "Qwen/Qwen2.5-32B-Instruct",
    "meta-llama/Llama-3.1-70B-Instruct",
)


# --- nodes -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeSpec:
    """One generated node: hashable, so its slices, shapes and allocator are built once per process."""

    model: str
    count: int
    mig: MigMode
    partitioned: int = 0  # static: GPUs 0..partitioned-1 carry `layout`
    layout: int = 0  # index into the model's maximal MIG layouts
    shares: str = ""  # ConsumableShares mode ("" off)
    fabric: bool = False  # FabricManagerPartitioning
    gpudra_attributes: bool = False
    release: str = DEFAULT_DRIVER_RELEASE
    strategy: str = "mixed"  # the device plugin's migStrategy on a static MIG node: mixed or single

    @property
    def name(self) -> str:
        return "node-0"


@dataclass(frozen=True)
class Node:
    spec: NodeSpec
    slices: list[dict[str, Any]]
    shapes: DeviceShapes
    allocator: Allocator
    # What the device plugin advertises (see `NodeSpec.strategy`), each resource with the least memory the driver
    # publishes for one of its devices.
    resources: dict[str, int]
    memories: dict[str, int]

    @property
    def gpus(self) -> int:
        return self.resources.get(GPU, 0)


@functools.cache
def _layouts(model: str) -> tuple[tuple[Placement, ...], ...]:
    mig = MODELS[model].mig
    assert mig is not None
    return tuple(mig.enumerate_layouts(maximal_only=True))


@functools.cache
def _uniform_layouts(model: str) -> tuple[int, ...]:
    """Indices of the maximal layouts of one profile only (what migStrategy single can advertise)."""
    return tuple(i for i, layout in enumerate(_layouts(model)) if len({p.profile_name for p in layout}) == 1)


@st.composite
def node_specs(draw: st.DrawFn) -> NodeSpec:
    mig_models = sorted(k for k, m in MODELS.items() if m.mig is not None)
    model = MODELS[draw(st.sampled_from(mig_models if draw(st.booleans()) else sorted(MODELS)))]
    count = draw(st.sampled_from(sorted({c for c in (1, 2, 4, 8) if c <= model.gpus_per_node})))
    release = draw(st.sampled_from(DRIVER_RELEASES))
    modes: list[MigMode] = ["none", "static", "dynamic"] if model.mig is not None else ["none"]
    if not driver_shape(release).dynamic_mig:
        modes = [m for m in modes if m != "dynamic"]
    # static, migStrategy mixed: some GPUs partitioned, at least one left whole (a node of MIG devices only has no
    # nvidia.com/gpu under mixed; the single strategy covers it)
    mig = draw(st.sampled_from(modes))
    partitioned = layout = 0
    strategy = "mixed"
    if mig == "static" and (count == 1 or draw(st.integers(0, 3)) == 0):
        # migStrategy single: every GPU in one layout of one profile, each MIG device an nvidia.com/gpu
        strategy, partitioned = "single", count
        layout = draw(st.sampled_from(_uniform_layouts(model.key)))
    elif mig == "static":
        partitioned = draw(st.integers(1, count - 1))
        layout = draw(st.integers(0, len(_layouts(model.key)) - 1))
    shares = fabric = None
    if release == "0.5":  # the driver release with ConsumableShares and FabricManagerPartitioning
        shares = draw(st.sampled_from(["", "", "memory", "unlimited", "4"]))
        fabric = draw(st.booleans())
    attributes = draw(st.booleans())
    return NodeSpec(
        model.key, count, mig, partitioned, layout, shares or "", bool(fabric), attributes, release, strategy
    )


@functools.cache
def build_node(spec: NodeSpec) -> Node:
    model = get(spec.model)
    layouts = {i: _layouts(spec.model)[spec.layout] for i in range(spec.partitioned)}
    gpus = synthetic_node(model, spec.name, spec.count, mig_layouts=layouts or None)
    names = (["ConsumableShares"] if spec.shares else []) + (["FabricManagerPartitioning"] if spec.fabric else [])
    gates = parse_driver_gates(names, spec.release, spec.shares or "memory")
    slices = node_resource_slices(
        gpus,
        mig_mode=spec.mig,
        driver_release=spec.release,
        gpudra_attributes=spec.gpudra_attributes,
        driver_gates=gates,
    )
    resources: dict[str, int] = {GPU: spec.count - spec.partitioned} if spec.count > spec.partitioned else {}
    memories: dict[str, int] = {}
    for device in (d for s in slices for d in s["spec"].get("devices", [])):
        attributes = device["attributes"]
        kind = attributes.get("type", {}).get("string")
        if kind == "gpu":
            name = GPU
        elif kind == "mig" and spec.strategy == "single":
            name = GPU
            resources[name] = resources.get(name, 0) + 1
        elif kind == "mig" and spec.mig == "static":
            name = f"nvidia.com/mig-{attributes['profile']['string']}"
            resources[name] = resources.get(name, 0) + 1
        else:
            continue
        memory = int(Quantity.parse(device["capacity"]["memory"]["value"]).value)
        memories[name] = min(memories.get(name, memory), memory)
    allocator = Allocator(slices=slices, classes=device_classes(), features=FeatureSet.latest())
    return Node(spec, slices, fold_shapes(slices, device_classes()), allocator, resources, memories)


# --- pods --------------------------------------------------------------------------------------------------------


@st.composite
def vllm_commands(draw: st.DrawFn, gpus: int) -> list[str]:
    words = ["vllm", "serve", draw(st.sampled_from(VLLM_MODELS))]
    if gpus > 1 or draw(st.booleans()):
        words += [draw(st.sampled_from(["--tensor-parallel-size", "-tp"])), str(max(gpus, 1))]
    if draw(st.booleans()):
        words += ["--gpu-memory-utilization", draw(st.sampled_from(["0.5", "0.8", "0.95"]))]
    if draw(st.booleans()):
        words += ["--max-model-len", draw(st.sampled_from(["2048", "8192", "32768"]))]
    return words


def _container(name: str, count: int, command: list[str] | None = None, resource: str = GPU) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": "img"}
    if count:
        container["resources"] = {"limits": {resource: count}}
    if command:
        container["command"] = command
    return container


@st.composite
def pods(draw: st.DrawFn, resources: dict[str, int], memory: int) -> dict[str, Any]:
    """A legacy pod for a node that advertises `resources` (whole GPUs of `memory` bytes, MIG devices): mostly within
    them (the premise sorts out the rest). Each container asks for one kind, as guardrails wants."""
    kinds = sorted(resources) or [GPU]

    def counted() -> st.SearchStrategy[tuple[str, int]]:
        """A resource the node advertises and a count up to what it has (mostly a few)."""
        return st.sampled_from(kinds).flatmap(
            lambda r: st.tuples(st.just(r), st.integers(0, 2) | st.integers(0, max(resources.get(r, 1), 1)))
        )

    resource = draw(st.sampled_from(kinds)) if GPU not in resources or draw(st.booleans()) else GPU
    main = draw(st.integers(1, max(resources.get(resource, 1), 1)))
    command = draw(st.none() | vllm_commands(main)) if resource == GPU else None
    containers = [_container("main", main, command, resource)]
    if draw(st.booleans()):
        other, count = draw(counted())
        containers.append(_container("helper", min(count, 2), resource=other))
    spec: dict[str, Any] = {"containers": containers}
    inits = []
    for i in range(draw(st.integers(0, 2))):
        other, count = draw(counted())
        init = _container(f"init-{i}", count, resource=other)
        if draw(st.booleans()):
            init["restartPolicy"] = "Always"  # a native sidecar: its devices add
        inits.append(init)
    if inits:
        spec["initContainers"] = inits
    metadata: dict[str, Any] = {"name": "p", "namespace": "default"}
    annotations: dict[str, str] = {}
    if draw(st.booleans()):
        mib = draw(st.integers(1, max(1, memory * 9 // 8 // MIB)))  # a little past the GPU, now and then
        annotations["gpudra.io/vram"] = draw(st.sampled_from([f"{mib}Mi", f"{max(1, mib // 1024)}Gi"]))
    if draw(st.booleans()):
        annotations["gpudra.io/share"] = draw(st.sampled_from(["true", "false", "mps", "time-slicing"]))
    if draw(st.booleans()):
        annotations["gpudra.io/topology"] = draw(st.sampled_from(["nvlink", "pcie"]))
    if annotations:
        metadata["annotations"] = annotations
    if draw(st.booleans()):
        metadata["labels"] = {"ray.io/node-type": "worker"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


@st.composite
def cases(draw: st.DrawFn) -> tuple[dict[str, Any], NodeSpec]:
    """A node, and a pod drawn for it."""
    spec = draw(node_specs())
    node = build_node(spec)
    return draw(pods(node.resources, node.memories.get(GPU, 0))), spec


def _limits(container: dict[str, Any]) -> dict[str, int]:
    limits = (container.get("resources") or {}).get("limits") or {}
    return {name: int(count) for name, count in limits.items() if name.startswith("nvidia.com/")}


def device_plugin_requests(pod: dict[str, Any]) -> dict[str, int]:
    """The pod's effective request per legacy resource (kubelet device manager, NodeResourcesFit): init containers run
    one after another, each beside the restartable sidecars started before it; then the app containers beside all
    sidecars."""
    sidecars: dict[str, int] = {}
    peak: dict[str, int] = {}
    for init in pod["spec"].get("initContainers", []):
        for name, count in _limits(init).items():
            if init.get("restartPolicy") == "Always":
                sidecars[name] = sidecars.get(name, 0) + count
                peak[name] = max(peak.get(name, 0), sidecars[name])
            else:
                peak[name] = max(peak.get(name, 0), sidecars.get(name, 0) + count)
    app = dict(sidecars)
    for container in pod["spec"]["containers"]:
        for name, count in _limits(container).items():
            app[name] = app.get(name, 0) + count
    return {
        name: max(peak.get(name, 0), app.get(name, 0))
        for name in {*peak, *app}
        if max(peak.get(name, 0), app.get(name, 0))
    }


def summed_requests(pod: dict[str, Any]) -> dict[str, int]:
    """Every container's devices added up, init containers' too (what gpudra's one request per container asks)."""
    out: dict[str, int] = {}
    for container in [*pod["spec"].get("initContainers", []), *pod["spec"]["containers"]]:
        for name, count in _limits(container).items():
            out[name] = out.get(name, 0) + count
    return out


def evidence_bytes(pod: dict[str, Any]) -> int:
    """The most memory per device the pod's evidence asks (0: none): its `gpudra.io/vram`, else each GPU
    container's model estimate (the device memory a pre-allocating server needs)."""
    vram = (pod["metadata"].get("annotations") or {}).get("gpudra.io/vram")
    if vram is not None:
        return int(Quantity.parse(vram).value)
    need = 0
    for container in [*pod["spec"].get("initContainers", []), *pod["spec"]["containers"]]:
        server = parse_container(container) if _limits(container).get(GPU) else None
        estimate = estimate_memory(server) if server is not None else None
        if estimate is not None and estimate.known:
            need = max(need, estimate.min_device_bytes or 0, estimate.bytes_per_device or 0)
    return need


# --- the property ------------------------------------------------------------------------------------------------

POLICIES = load_policies()


class _Current:
    """The node the claim check looks at: one `ClaimCheck` (and one memoised PolicySet) for every example."""

    shapes: DeviceShapes = fold_shapes([], device_classes())

    def __call__(self) -> DeviceShapes:
        return self.shapes


CURRENT = _Current()
CHECKED = POLICIES.with_claim_check(ClaimCheck(CURRENT))


def _with_mig_single() -> PolicySet:
    """The shipped set as `gpudra migrate --device-plugin-config` leaves it for a cluster whose device plugin runs
    migStrategy single: the mig-single policy's printed `migStrategySingle: true` merged into its file."""
    assert migration(read_configs([{"version": "v1", "flags": {"migStrategy": "single"}}])).mig_single
    copy = Path(tempfile.mkdtemp(prefix="gpudra-mig-single-"))
    for file in shipped_policies_dir().glob("*.yaml"):
        shutil.copy(file, copy)
    policy = yaml.safe_load((copy / "mig-single.yaml").read_text())
    policy["spec"]["params"]["migStrategySingle"] = True
    (copy / "mig-single.yaml").write_text(yaml.safe_dump(policy))
    return load_policies(copy).with_claim_check(ClaimCheck(CURRENT))


# Nodes whose device plugin runs migStrategy single are in clusters configured so (the premise of the config).
CHECKED_MIG_SINGLE = _with_mig_single()


def fits(pod: dict[str, Any], node: Node) -> bool:
    """The premise: the device plugin would run `pod` on `node`, and its evidence fits the node's GPUs."""
    wanted = device_plugin_requests(pod)
    if not wanted or any(count > node.resources.get(name, 0) for name, count in wanted.items()):
        return False
    return evidence_bytes(pod) <= min(node.memories[name] for name in wanted)


def outcome(policies: PolicySet, pod: dict[str, Any], node: Node) -> str:
    """What becomes of `pod` on `node`: "allocates: <policy> <alternatives chosen>", "refused: <why>", or
    "stranded: <why>" (admitted with a claim that does not allocate there)."""
    CURRENT.shapes = node.shapes
    decision = policies.evaluate(pod, NAMESPACE)
    if not decision.allowed:
        return f"refused: {decision.message}"
    translation = translate(pod, decision)
    if not translation.templates:
        return f"stranded: not translated ({decision.policy}): {'; '.join(decision.warnings)}"
    (template,) = translation.templates
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "default", "uid": "uid-c"},
        "spec": template["spec"]["spec"],
    }
    try:
        (allocation,) = node.allocator.allocate([claim], node={"metadata": {"name": node.spec.name}}, mode="upstream")
    except Unsatisfiable as exc:
        return f"stranded: {decision.policy}: {exc}"
    chosen = sorted({r["request"].partition("/")[2] or "exactly" for r in allocation["devices"]["results"]})
    return f"allocates: {decision.policy} {', '.join(chosen)}"


def _init_outgrows_the_rest(pod: dict[str, Any]) -> bool:
    """Whether a plain init container asks for more devices of a resource than any one container after it."""
    spec = pod["spec"]
    inits = spec.get("initContainers") or []
    for i, init in enumerate(inits):
        if init.get("restartPolicy") == "Always":
            continue
        later = [*inits[i + 1 :], *spec.get("containers", [])]
        for name, count in _limits(init).items():
            if all(_limits(c).get(name, 0) < count for c in later):
                return True
    return False


def holds(pod: dict[str, Any], node: Node, result: str) -> bool:
    """The property: a pod the device plugin runs there allocates there; any other pod is
    refused with a reason (the check's names the evidence; the API's 32-device limit is another) or allocates, never
    admitted with a claim that cannot (the check's own invariant)."""
    if fits(pod, node):
        return result.startswith("allocates: ")
    return result.startswith("allocates: ") or result.startswith("refused: ") and len(result) > len("refused: ")


@settings(
    max_examples=300,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(case=cases())
def test_a_pod_the_device_plugin_runs_gets_a_claim_that_allocates_there(case: tuple[dict[str, Any], NodeSpec]) -> None:
    pod, spec = case
    node = build_node(spec)
    result = outcome(CHECKED_MIG_SINGLE if spec.strategy == "single" else CHECKED, pod, node)
    wanted = device_plugin_requests(pod)
    if any(count > node.resources.get(name, 0) for name, count in wanted.items()):
        event("the device plugin would not run it: more devices than the node has")
    elif wanted and evidence_bytes(pod) > min(node.memories[name] for name in wanted):
        event("the device plugin would not run it: evidence larger than the node's GPUs")
    else:
        mig = "MIG resources" if any(name != GPU for name in wanted) else "nvidia.com/gpu"
        event(f"the device plugin runs it ({spec.mig} MIG, {mig}): {result.partition(':')[0]}")
        event(f"the device plugin runs it, {result}")
        annotations = pod["metadata"].get("annotations") or {}
        source = "annotation" if "gpudra.io/vram" in annotations else "model" if evidence_bytes(pod) else "none"
        event(f"the device plugin runs it, evidence: {source}")
        if _init_outgrows_the_rest(pod):
            event(f"the device plugin runs it, an init container outgrows the containers after it: {result[:9]}")
    assert holds(pod, node, result), f"{spec}\n{pod}\n{result}"


def test_without_the_claim_check_pods_are_stranded() -> None:
    """The property fails on the policies alone (main before cd6a283): a claim no device of the node satisfies is
    admitted; the check refuses it naming the evidence."""

    def counterexample(case: tuple[dict[str, Any], NodeSpec]) -> bool:
        pod, spec = case
        node = build_node(spec)
        return not holds(pod, node, outcome(POLICIES, pod, node))

    pod, spec = find(
        cases(), counterexample, settings=settings(max_examples=300, deadline=None, database=None, derandomize=True)
    )
    node = build_node(spec)
    unchecked, checked = outcome(POLICIES, pod, node), outcome(CHECKED, pod, node)
    assert unchecked.startswith("stranded: "), unchecked
    assert holds(pod, node, checked) and checked.startswith("refused: "), (pod, spec, checked)
