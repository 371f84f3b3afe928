"""One decision for a workload and its pods (issue 25, item 1).

`gpudra translate` decides each pod template of a workload as the pod its controller creates
(`workloads.controller_pod`); the webhook decides that pod at admission. The property test builds every kind
gpudra rewrites around a generated spread of templates, translates it, and sends the pod the controller creates
through the in-process admission path (`webhook.admission.Admission`, as tests/webhook does): both must build the same
claim with the same policy, or both deny. The unit tests check the controller model against the controllers' source
(each test names the file its expectations come from), and Ray's `num-gpus` against KubeRay's rules.
"""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import jsonpatch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dra.documents import Document
from dra.errors import InputError
from kubeapi import NamespaceCache
from manifest_translation import translate_documents
from policyengine import PolicySet, load_policies, shipped_policies_dir
from tests.webhook.test_admission import RecordingApiServer
from tests.workloads.builders import NAMESPACE, POLICIES, gpu_template, make_workload
from webhook.admission import Admission
from webhook.metrics import WebhookMetrics
from webhook.policy_store import PolicyStore
from webhook.review import AdmissionDenied, parse_review, pod_review
from workloads import KNOWN_KINDS, controller_pod, pod_templates

REWRITTEN_KINDS = [k.kind for k in KNOWN_KINDS]


def test_every_known_kind_is_built_by_the_test() -> None:
    template = {"spec": {"containers": [{"name": "a", "image": "a"}]}}
    for kind in REWRITTEN_KINDS:
        assert pod_templates(make_workload(kind, template)), kind


_IMAGES = ["vllm/vllm-openai:v0.6.3", "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04", "rayproject/ray:2.9.0-gpu"]


@st.composite
def _templates(draw: st.DrawFn) -> dict[str, Any]:
    containers = []
    for i in range(draw(st.integers(1, 2))):
        container: dict[str, Any] = {"name": f"c{i}", "image": draw(st.sampled_from(_IMAGES))}
        gpus = draw(st.sampled_from([0, 1, 2, 4, 8]))
        if gpus:
            resource = draw(st.sampled_from(["nvidia.com/gpu", "nvidia.com/gpu", "nvidia.com/mig-1g.10gb"]))
            count = 1 if resource.startswith("nvidia.com/mig") else gpus
            limits: dict[str, Any] = {resource: count, "cpu": "4"}
            if draw(st.booleans()):
                limits["nvidia.com/gpumem"] = 8000
            both = draw(st.booleans())  # limits only, or requests and limits as the API server defaults them
            container["resources"] = {"limits": limits, **({"requests": dict(limits)} if both else {})}
        if draw(st.booleans()):
            container["command"] = draw(st.sampled_from([["vllm", "serve"], ["python3", "-m", "sglang.launch_server"]]))
        tp = draw(st.sampled_from([None, "--tensor-parallel-size", "--num-shard"]))
        if tp is not None:
            container["args"] = ["--model", "meta-llama/Llama-3.1-8B-Instruct", tp, str(max(gpus, 1))]
        if draw(st.booleans()):
            container["env"] = [{"name": "NUM_SHARD", "value": "2"}]
        containers.append(container)
    metadata: dict[str, Any] = {}
    labels = draw(st.dictionaries(st.sampled_from(["app", "tier", "ray.io/is-ray-node"]), st.sampled_from(["a", "b"])))
    if labels:
        metadata["labels"] = labels
    annotations = draw(
        st.dictionaries(
            st.sampled_from(["gpudra.io/vram", "gpudra.io/topology", "gpudra.io/share"]),
            st.sampled_from(["20Gi", "pcie", "false"]),
            max_size=2,
        )
    )
    if annotations:
        metadata["annotations"] = annotations
    spec: dict[str, Any] = {"containers": containers}
    if draw(st.booleans()):  # an init container, a GPU sidecar (restartPolicy Always) or a plain one
        init: dict[str, Any] = {"name": "init", "image": "busybox"}
        if draw(st.booleans()):
            init["resources"] = {"limits": {"nvidia.com/gpu": 1}}
            if draw(st.booleans()):
                init["restartPolicy"] = "Always"
        spec["initContainers"] = [init]
    return {"metadata": metadata, "spec": spec}


def _admission(namespace: dict[str, Any] | None = None) -> tuple[Admission, RecordingApiServer]:
    api = RecordingApiServer({NAMESPACE: namespace} if namespace is not None else None)
    store: PolicyStore[PolicySet] = PolicyStore(shipped_policies_dir(), load_policies)
    return Admission(store, WebhookMetrics(), writer=api, namespaces=NamespaceCache(api)), api


def _webhook_claim(
    admission: Admission, api: RecordingApiServer, pod: dict[str, Any], namespace: str = NAMESPACE
) -> tuple[str, Any]:
    """What the webhook does with the pod: ("denied", message), ("unchanged", None) or (policy, the claim spec)."""
    try:
        response = admission.mutate(parse_review(pod_review(pod, uid="u", namespace=namespace)))["response"]
    except AdmissionDenied as exc:
        return "denied", exc.message
    if "patch" not in response:
        return "unchanged", None
    mutated = jsonpatch.apply_patch(copy.deepcopy(pod), json.loads(base64.b64decode(response["patch"])))
    annotations = mutated["metadata"].get("annotations") or {}
    if "gpudra.io/translated" not in annotations:
        return "unchanged", None
    name = annotations["gpudra.io/translated"]
    return annotations["gpudra.io/policy"], api.templates[(namespace, name)]["spec"]["spec"]


_NAMESPACE_LABELS = st.dictionaries(
    st.sampled_from(["gpudra.io/topology", "gpudra.io/max-vram", "gpudra.io/max-gpus", "gpudra.io/mode"]),
    st.sampled_from(["pcie", "160Gi", "8", "audit"]),
    max_size=2,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(REWRITTEN_KINDS), template=_templates(), labels=_NAMESPACE_LABELS)
def test_translate_and_the_webhook_give_a_controllers_pod_one_claim(
    kind: str, template: dict[str, Any], labels: dict[str, str]
) -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE, "labels": labels}}
    workload = make_workload(kind, template)
    objects, errors = translate_documents([Document(workload, "w.yaml", 1)], POLICIES, namespace)
    assert not errors
    admission, api = _admission(namespace)
    for t in objects[0].templates:
        # The pod the controller creates from the template as written (not from gpudra's rewrite).
        pod = controller_pod(workload, t.pod.template, t.pod.pod)
        webhook = _webhook_claim(admission, api, pod)
        if t.denied:
            assert webhook[0] == "denied", (t.pod.label, webhook)
        elif not t.translation.changed:
            assert webhook == ("unchanged", None), (t.pod.label, webhook)
        else:
            ours = (t.decision.policy, t.templates[0]["spec"]["spec"])
            assert ours == webhook, t.pod.label
    # Translating the result again changes nothing (Ray's num-gpus included), and the pods the controllers create
    # from the rewritten templates are left alone by the webhook.
    if any(t.denied for t in objects[0].templates):  # a denied template leaves the whole object as written
        assert objects[0].result is workload
        return
    again, errors = translate_documents([Document(objects[0].result, "w.yaml", 1)], POLICIES, namespace)
    assert not errors and again[0].result == objects[0].result and not again[0].changed
    for first, t in zip(objects[0].templates, again[0].templates, strict=True):
        if first.translation.changed:
            pod = controller_pod(objects[0].result, t.pod.template, t.pod.pod)
            assert _webhook_claim(admission, api, pod) == ("unchanged", None), t.pod.label


def test_a_pod_is_decided_as_written() -> None:
    pod = make_workload("Pod", gpu_template(1))
    templates = pod_templates(pod)
    assert controller_pod(pod, templates[0], pod) == pod


_SCALARS = st.sampled_from(["", "x", "2", "1.5", "true", "nvidia.com/gpu"])
_JUNK = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10) | _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["name", "a", "cpu"]), inner, max_size=3)
    ),
    max_leaves=6,
)
_READ_KEYS = [
    *("labels", "annotations", "rayStartParams", "resources", "env", "groupName", "size", "replicas"),
    *("replicatedJobs", "mlPolicy", "command", "args", "completionMode", "name", "metadata", "limits"),
]


def _dict_paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path] if isinstance(value, dict) else []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found += _dict_paths(item, (*path, key))
    return found


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(REWRITTEN_KINDS), data=st.data())
def test_odd_shapes_in_what_the_controller_model_reads_are_input_errors_never_crashes(kind: str, data: Any) -> None:
    workload = make_workload(kind, gpu_template(2, args=["--tensor-parallel-size", "2"]))
    for _ in range(data.draw(st.integers(1, 3))):
        target: Any = workload
        path = data.draw(st.sampled_from(_dict_paths(workload)))
        for part in path:
            target = target[part]
        target[data.draw(st.sampled_from(_READ_KEYS))] = data.draw(_JUNK)
    objects, errors = translate_documents([Document(workload, "w.yaml", 1)], POLICIES)  # raises only on a bug
    assert len(objects) == 1 and all(isinstance(e, InputError) for e in errors)
