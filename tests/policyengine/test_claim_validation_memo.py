"""Issue 22: the claim-validation memo is bounded in characters: claims carrying long pod strings never grow it."""

from __future__ import annotations

from policyengine import _claim
from policyengine._claim import validate_claim, validated_memo_chars


def _claim_with(text: str) -> dict[str, object]:
    selector = {"cel": {"expression": f"device.attributes['gpu.nvidia.com'].productName == '{text}'"}}
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "selectors": [selector]}}
    return {"devices": {"requests": [request]}}


def test_many_claims_with_long_strings_stay_within_the_memo_budget() -> None:
    for i in range(1000):
        assert validate_claim(_claim_with(f"{i}-" + "n" * 8_000)) == []
    assert validated_memo_chars() <= _claim._VALIDATED_MAX_CHARS


def test_a_claim_past_the_key_budget_is_validated_each_time_and_never_kept() -> None:
    before = validated_memo_chars()
    huge = _claim_with("h" * (_claim._VALIDATED_MAX_KEY_CHARS + 1))
    assert validate_claim(huge) == validate_claim(huge)
    assert repr(huge) not in _claim._VALIDATED and validated_memo_chars() <= max(before, _claim._VALIDATED_MAX_CHARS)
