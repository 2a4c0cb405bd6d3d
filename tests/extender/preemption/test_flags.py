"""The flags that bound gang preemption, read into ContentionSettings; bad values are refused
by the parser with what is wanted."""

from __future__ import annotations

import argparse
from dataclasses import replace

import pytest

from extender.preemption.flags import limit_settings
from extender.preemption.settings import ContentionSettings
from kube_rdma_cli.dispatch import build_parser


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["extender", "--cluster-snapshot", "c.json", *argv])


def test_without_flags_the_defaults_stand() -> None:
    settings = ContentionSettings(**limit_settings(parse()))
    assert settings == ContentionSettings()
    assert (settings.max_gang_size, settings.eviction_budget) == (4096, 64)
    assert (settings.backoff, settings.backoff_cap) == (300.0, 3600.0)
    assert not settings.delete_when_refused
    assert (settings.across_classes, settings.across_namespaces) == ((), ())


def test_every_flag_reaches_its_setting() -> None:
    args = parse(
        "--max-gang-size=16",
        "--preemption-backoff=10",
        "--preemption-backoff-max=40.5",
        "--eviction-budget=0",
        "--preempt-across-namespaces-class=critical",
        "--preempt-across-namespaces-class=urgent",
        "--preempt-across-namespaces-namespace=ops",
        "--delete-when-eviction-refused",
    )
    assert ContentionSettings(**limit_settings(args)) == replace(
        ContentionSettings(),
        max_gang_size=16,
        backoff=10.0,
        backoff_cap=40.5,
        eviction_budget=0,
        across_classes=("critical", "urgent"),
        across_namespaces=("ops",),
        delete_when_refused=True,
    )


@pytest.mark.parametrize(
    ("flag", "said"),
    [
        ("--max-gang-size=0", "'0' is not a whole number of 1 or more"),
        ("--eviction-budget=-1", "'-1' is not a whole number of 0 or more"),
        ("--preemption-backoff=soon", "'soon' is not a number of seconds, 0 or more"),
        ("--preemption-backoff-max=-5", "'-5' is not a number of seconds, 0 or more"),
        ("--preemption-backoff=nan", "'nan' is not a number of seconds, 0 or more"),
    ],
)
def test_bad_values_are_refused(flag: str, said: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        parse(flag)
    assert exit.value.code == 2
    assert said in capsys.readouterr().err
