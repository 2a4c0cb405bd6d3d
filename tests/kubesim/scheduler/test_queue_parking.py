"""Unschedulable pods parked as kube-scheduler's unschedulablePods: until a cluster event or the
longest park, then for the rest of their backoff."""

from __future__ import annotations

from kubesim.scheduler import ManualClock
from kubesim.scheduler.queue import SchedulingQueue


def test_a_parked_pod_waits_for_an_event_then_its_backoff() -> None:
    clock = ManualClock()
    queue = SchedulingQueue(clock, 1.0, 10.0, max_unschedulable=300.0)
    queue.add(("ns", "a"))
    queued = queue.pop()
    assert queued is not None
    queue.park(queued)
    assert queue.next_ready() == 300.0
    clock.advance(5.0)
    assert queue.pop() is None, "its backoff is over, but no event came"
    queue.move_all()
    assert queue.next_ready() == 1.0
    popped = queue.pop()
    assert popped is not None
    assert popped.key == ("ns", "a")


def test_a_parked_pod_is_retried_after_the_longest_park() -> None:
    clock = ManualClock()
    queue = SchedulingQueue(clock, 1.0, 10.0, max_unschedulable=300.0)
    queue.add(("ns", "a"))
    queued = queue.pop()
    assert queued is not None
    queue.park(queued)
    clock.advance(299.0)
    assert queue.pop() is None
    clock.advance(1.0)
    popped = queue.pop()
    assert popped is not None
    assert popped.key == ("ns", "a")


def test_without_a_longest_park_an_unschedulable_pod_backs_off() -> None:
    clock = ManualClock()
    queue = SchedulingQueue(clock, 1.0, 10.0)
    queue.add(("ns", "a"))
    queued = queue.pop()
    assert queued is not None
    queue.park(queued)
    assert queue.next_ready() == 1.0


def test_a_pod_the_extender_rejected_is_moved_by_any_cluster_event() -> None:
    """pkg/scheduler/schedule_one.go findNodesThatFitPod: a pod whose nodes the extender
    rejected has the extender among its rejectors, which registers no events, so any cluster
    event requeues it (kubernetes#122019); a pod only the in-tree filters rejected waits for
    the events they registered (here: a pod deleted, a Node changed)."""
    clock = ManualClock()
    queue = SchedulingQueue(clock, 1.0, 10.0, max_unschedulable=300.0)
    for name in ("by-extender", "in-tree"):
        queue.add(("ns", name))
    first, second = queue.pop(), queue.pop()
    assert first is not None
    assert second is not None
    queue.park(first, any_event=True)
    queue.park(second)
    clock.advance(5.0)
    queue.move_any_event()  # a pod bound somewhere
    popped = queue.pop()
    assert popped is not None
    assert popped.key == ("ns", "by-extender")
    assert queue.pop() is None
