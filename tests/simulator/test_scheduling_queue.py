"""kube-scheduler's scheduling queue: PrioritySort, backoff, re-stamping, events moving unschedulable pods."""

from __future__ import annotations

from simulator.scheduling import SchedulingQueue

from .helpers import pod


def _names(queue: SchedulingQueue) -> list[str]:
    out = []
    while (item := queue.pop()) is not None:
        out.append(item.pod.name)
    return out


def test_active_queue_is_priority_then_timestamp() -> None:
    queue = SchedulingQueue()
    queue.add(pod("late-high", priority=10), 5.0)
    queue.add(pod("early-low"), 1.0)
    queue.add(pod("early-high", priority=10), 2.0)
    assert _names(queue) == ["early-high", "late-high", "early-low"]


def test_backoff_doubles_from_1s_to_10s() -> None:
    queue = SchedulingQueue()
    assert [queue.backoff(n) for n in range(1, 7)] == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    assert queue.backoff(200) == 10.0


def test_a_failed_pod_waits_for_an_event_then_orders_by_backoff_and_restamp() -> None:
    queue = SchedulingQueue()
    queue.add(pod("old"), 0.0)
    queue.add(pod("new"), 1.0)
    old, new = queue.pop(), queue.pop()
    assert old is not None and new is not None
    queue.failed(old, 5.0)  # re-stamped at 5
    queue.failed(new, 3.0)
    assert queue.pop() is None and len(queue) == 2  # unschedulable: nothing to try until an event
    queue.failed(queue_item := _requeue(queue, 20.0, "old"), 20.0)  # "old" fails again: 2 attempts, stamped 20
    queue.move_all(20.5)
    # "new" (1 attempt, stamped 3: backoff over) is active; "old" is backing off until 22: popped after it
    assert _names(queue) == ["new", "old"]
    assert queue_item.attempts == 2


def _requeue(queue: SchedulingQueue, now: float, name: str):  # type: ignore[no-untyped-def]
    queue.move_all(now)
    items = []
    while (item := queue.pop()) is not None:
        items.append(item)
    wanted = next(i for i in items if i.pod.name == name)
    for item in items:
        if item is not wanted:
            queue.failed(item, item.timestamp)  # back as they were, one more attempt
            item.attempts -= 1
    return wanted


def test_unschedulable_pods_are_flushed_after_five_minutes() -> None:
    queue = SchedulingQueue()
    queue.add(pod("p"), 0.0)
    item = queue.pop()
    assert item is not None
    queue.failed(item, 0.0)
    queue.flush_leftover(299.0)
    assert queue.pop() is None
    queue.flush_leftover(301.0)
    assert _names(queue) == ["p"]
