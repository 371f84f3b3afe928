"""Hot reload with ConfigMap-mount semantics: the `..data` symlink swap, and broken sets never serving."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from webhook.policy_store import PolicyStore


@dataclass
class YamlSet:
    docs: dict[str, object]
    errors: list[str] = field(default_factory=list)


def load_yaml_set(directory: Path) -> YamlSet:
    out = YamlSet({})
    for path in sorted(directory.glob("*.yaml")):
        try:
            out.docs[path.name] = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            out.errors.append(f"{path.name}: {exc}")
    return out


def mount_configmap(root: Path, files: dict[str, str], generation: int) -> None:
    """Lay out files as the kubelet does: `..<ts>/` data dir, `..data` link swapped atomically, key links."""
    data_dir = root / f"..2026_12_02_{generation:04d}"
    data_dir.mkdir()
    for name, text in files.items():
        (data_dir / name).write_text(text)
    tmp = root / "..data_tmp"
    tmp.symlink_to(data_dir.name)
    os.replace(tmp, root / "..data")
    for name in files:
        link = root / name
        if not link.is_symlink():
            link.symlink_to(f"..data/{name}")


def test_reload_follows_data_symlink_swap_and_rejects_broken_sets(tmp_path: Path) -> None:
    mount_configmap(tmp_path, {"a.yaml": "x: 1\n"}, 1)
    events: list[bool] = []
    store = PolicyStore(tmp_path, load_yaml_set, on_reload=events.append)
    assert store.current.docs == {"a.yaml": {"x": 1}}
    assert store.reload_if_changed() is False

    mount_configmap(tmp_path, {"a.yaml": "x: 2\n"}, 2)
    assert store.reload_if_changed() is True
    assert store.current.docs == {"a.yaml": {"x": 2}}

    mount_configmap(tmp_path, {"a.yaml": "x: [unclosed\n"}, 3)
    assert store.reload_if_changed() is False
    assert store.current.docs == {"a.yaml": {"x": 2}}  # the good set keeps serving
    status = store.status()
    assert status.failures == 1 and status.last_error is not None and "a.yaml" in status.last_error
    assert store.reload_if_changed() is False and store.status().failures == 1  # same broken content not retried

    mount_configmap(tmp_path, {"a.yaml": "x: 3\n"}, 4)
    assert store.reload_if_changed() is True
    assert store.status().last_error is None and store.status().reloads == 2
    assert events == [True, False, True]


def test_initial_broken_set_fails_loudly(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("{")
    with pytest.raises(ValueError, match="do not load"):
        PolicyStore(tmp_path, load_yaml_set)


def test_an_empty_policy_set_is_refused_at_start_and_at_reload(tmp_path: Path) -> None:
    import shutil

    from policyengine import PolicySet, load_policies, shipped_policies_dir
    from webhook.server import refuse_empty

    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="holds no GPUClaimPolicy"):
        PolicyStore(empty, load_policies, refuse=refuse_empty)

    live = tmp_path / "live"
    shutil.copytree(shipped_policies_dir(), live, ignore=shutil.ignore_patterns("tests"))
    outcomes: list[bool] = []
    store: PolicyStore[PolicySet] = PolicyStore(live, load_policies, refuse=refuse_empty, on_reload=outcomes.append)
    serving = store.current
    for path in live.glob("*.yaml"):
        path.unlink()
    (live / "README.md").write_text("not a policy")
    assert store.reload_if_changed() is False and outcomes == [False]
    assert store.current is serving and store.current.policies
    assert "holds no GPUClaimPolicy" in (store.status().last_error or "")
