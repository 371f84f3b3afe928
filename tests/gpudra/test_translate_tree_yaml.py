"""`gpudra translate -R`: a rewritten List wrapper is re-read by dra.yamlio like the rest of the file, so values the
strict reader keeps as text (timestamps) are written back as the same text."""

from __future__ import annotations

from pathlib import Path

import yaml

from dra.yamlio import load_yaml
from gpudra.commands.translate import translate_directory

FIXTURES = Path(__file__).parent / "fixtures" / "workloads"


def test_a_list_wrapper_keeps_its_timestamp_text(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    job = yaml.safe_dump(yaml.safe_load((FIXTURES / "job-vectoradd.yaml").read_text()))
    item = "".join(f"    {line}\n" if i else f"  - {line}\n" for i, line in enumerate(job.splitlines()))
    listing = "apiVersion: v1\nkind: List\nmetadata:\n  annotations:\n    built: 2024-01-01T00:00:00Z\nitems:\n"
    (root / "list.yaml").write_text(listing + item)
    assert translate_directory(root).code == 0
    ((written, _),) = list(load_yaml((root / "list.yaml").read_text()))
    assert written["metadata"]["annotations"]["built"] == "2024-01-01T00:00:00Z"
    assert "nvidia.com/gpu" not in str(written["items"])
