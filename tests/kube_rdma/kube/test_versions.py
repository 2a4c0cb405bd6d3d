"""Which watch events a reflector applies: the verdict for each event of a sequence, from the
list's resourceVersion on."""

from __future__ import annotations

import pytest

from kube_rdma.kube.versions import EventOrder, Verdict

APPLY, STALE, OUT = Verdict.APPLY, Verdict.STALE, Verdict.OUT_OF_ORDER


@pytest.mark.parametrize(
    ("events", "verdicts", "resume_from"),
    [
        (["101", "102", "105"], [APPLY, APPLY, APPLY], "105"),
        (["99", "100", "101"], [STALE, STALE, APPLY], "101"),  # the list holds up to 100
        (["101", "102", "101", "102"], [APPLY, APPLY, STALE, STALE], "102"),  # duplicates
        (["102", "101"], [APPLY, OUT], "102"),  # 101 was never applied: re-list
        (["101", "x7", "103"], [APPLY, APPLY, APPLY], "103"),  # an opaque version
    ],
    ids=["in order", "older than the list", "duplicated", "reordered", "opaque"],
)
def test_verdicts(events: list[str], verdicts: list[Verdict], resume_from: str) -> None:
    order = EventOrder("100")
    assert [order.judge(v) for v in events] == verdicts
    assert order.resume_from == resume_from


def test_a_bookmark_moves_the_resume_point_and_later_events_must_follow_it() -> None:
    order = EventOrder("100")
    order.bookmark("110")
    assert order.resume_from == "110"
    order.bookmark("105")  # an older bookmark changes nothing
    assert order.resume_from == "110"
    assert [order.judge(v) for v in ("107", "111")] == [OUT, APPLY]


def test_a_duplicate_older_than_the_window_is_taken_for_out_of_order() -> None:
    order = EventOrder("100", recent=2)
    assert [order.judge(v) for v in ("101", "102", "103", "101", "102")] == [
        APPLY,
        APPLY,
        APPLY,
        OUT,
        STALE,
    ]


def test_nothing_is_compared_when_the_list_version_is_opaque() -> None:
    order = EventOrder("opaque-1")
    assert [order.judge(v) for v in ("5", "3", "3")] == [APPLY, APPLY, APPLY]
    assert order.resume_from == "3"
    order.bookmark("opaque-9")
    assert order.resume_from == "opaque-9"
