"""Work past a review's deadline stops: the decision pool runs each job under a `dra.cancellation` deadline that the
policy engine and the CEL runtime check at bounded intervals, so a decision that runs long raises
`EvaluationCancelled` and its thread takes the next job. Asserted on states (the exception the job ended with, the
pool running another job), never on durations."""

from __future__ import annotations

import asyncio
import threading
import traceback
from typing import Any

import pytest

from dra.cancellation import Deadline, EvaluationCancelled, check_deadline, deadline_scope
from dra.cel import Environment, EvaluationBudget
from policyengine import PolicySet, load_policy_text
from webhook.deadline import DeadlineExceeded, DecisionPool

# Ten variables of about 960,000 cost units each: every one within the per-call limit (1,000,000) and all within the
# review's budget (10,000,000), so only the deadline can stop it (it runs for about a second on an idle machine).
_LONG = "lists.range(240000).all(i, i >= 0)"
POLICY = f"""\
apiVersion: gpudra.io/v1alpha1
kind: GPUClaimPolicy
metadata: {{name: slow}}
spec:
  matchConditions:
  - {{name: legacy, expression: gpu.legacy}}
  variables:
{chr(10).join(f"  - {{name: v{i}, expression: '{_LONG}'}}" for i in range(10))}
  validations:
  - expression: "{" && ".join(f"variables.v{i}" for i in range(10))}"
"""
POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "ns"},
    "spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
}


def _policies() -> PolicySet:
    policies, errors = load_policy_text(POLICY, "slow.yaml")
    assert errors == []
    return PolicySet.of(policies)


def test_the_slow_policy_is_within_its_cost_limits_without_a_deadline() -> None:
    decision = _policies().evaluate(POD)
    assert decision.allowed is True and decision.violations == ()


def test_a_decision_past_its_deadline_stops_and_frees_its_thread() -> None:
    policies = _policies()
    pool = DecisionPool(1, name="gpudra-test-cancel")
    ended: list[BaseException | str] = []
    done = threading.Event()

    def decide() -> object:
        try:
            return policies.evaluate(POD)
        except BaseException as exc:
            ended.append(exc)
            raise
        finally:
            if not ended:
                ended.append("finished")
            done.set()

    async def scenario() -> int:
        with pytest.raises(DeadlineExceeded):
            await pool.run(decide, 0.05)
        # One thread: this job runs once the first has let go of it (a generous bound, not a timing assertion).
        return await pool.run(lambda: 42, 120)

    assert asyncio.run(scenario()) == 42
    assert done.is_set() and len(ended) == 1
    assert isinstance(ended[0], EvaluationCancelled), ended
    assert pool.busy == 0


def test_a_cel_loop_checks_the_deadline_inside_one_expression() -> None:
    program = Environment.admission().compile(_LONG)
    deadline = Deadline(3600)
    deadline.cancel()
    with deadline_scope(deadline), pytest.raises(EvaluationCancelled) as caught:
        program.evaluate({}, budget=EvaluationBudget())
    frames = [frame.name for frame in traceback.extract_tb(caught.tb)]
    assert "_check" in frames  # raised by the cost meter, inside the comprehension, not between expressions


def test_outside_a_deadline_scope_nothing_is_checked() -> None:
    check_deadline()
    assert Environment.admission().compile("lists.range(1000).all(i, i >= 0)").evaluate({}) is True


async def _running(pool: DecisionPool, fn: Any) -> asyncio.Future[Any]:
    """`fn` started on the pool (a thread holds it), as the future of its request."""
    request = asyncio.ensure_future(pool.run(fn, 120))
    while pool.busy == 0:
        await asyncio.sleep(0.01)
    return request


def test_a_job_whose_deadline_passed_in_the_queue_never_starts() -> None:
    pool = DecisionPool(1, name="gpudra-test-queued")
    release = threading.Event()
    started: list[str] = []

    async def scenario() -> None:
        blocker = await _running(pool, release.wait)  # it holds the one thread
        with pytest.raises(DeadlineExceeded):
            await pool.run(lambda: started.append("queued job ran"), 0.01)
        release.set()
        await blocker
        assert await pool.run(lambda: "next", 120) == "next"

    asyncio.run(scenario())
    assert started == []


def test_a_job_whose_request_went_away_in_the_queue_never_starts() -> None:
    """A request cancelled while its job waits (the client hung up): the job is dropped, not run for nobody."""
    pool = DecisionPool(1, name="gpudra-test-gone")
    release = threading.Event()
    started: list[str] = []

    async def scenario() -> None:
        blocker = await _running(pool, release.wait)
        gone = asyncio.ensure_future(pool.run(lambda: started.append("ran for nobody"), 120))
        await asyncio.sleep(0)  # its job is queued behind the blocker
        gone.cancel()
        with pytest.raises(asyncio.CancelledError):
            await gone
        release.set()
        await blocker
        assert await pool.run(lambda: "next", 120) == "next"

    asyncio.run(scenario())
    assert started == []


def test_a_thread_whose_loop_closed_under_it_takes_the_next_job() -> None:
    """The outcome of a job whose event loop has closed (the server stopping) is dropped; the thread lives on."""
    pool = DecisionPool(1, name="gpudra-test-closed")
    release = threading.Event()
    finished = threading.Event()

    def slow() -> str:
        release.wait()
        finished.set()
        return "late"

    async def leave_it_running() -> None:
        await _running(pool, slow)

    asyncio.run(leave_it_running())  # cancels the waiting request and closes its loop, the job still running
    release.set()
    assert finished.wait(120)

    async def next_job() -> int:
        return await pool.run(lambda: 7, 120)

    assert asyncio.run(next_job()) == 7
    assert pool.busy == 0
