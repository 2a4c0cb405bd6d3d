"""Which error counters make a port unhealthy, and how fast they must grow to do so.

An InfiniBand or RoCE port counts errors for its whole life, and a healthy link still sees one
now and then: a single symbol error is a flake, not a broken cable. So each judged counter has a
rule, a rate over a window: the port is unhealthy while the counter grew within the last window
by more than the rate allows (rate 0: any increase at all). Counters without a rule are
information only; the discard counters grow under normal congestion and never judge a port.

Rules are written `COUNTER=RATE/WINDOW`, RATE in errors per minute and WINDOW like `30s`, `5m`
or `1h` (`symbol_error=10/5m`: more than 10 a minute over five minutes), or `COUNTER=off`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from agent.sysfs import ERROR_COUNTERS


@dataclass(frozen=True)
class ErrorRule:
    per_minute: float
    """The most errors a minute the window may average; 0: any increase is too many."""
    window_seconds: float

    @property
    def allowance(self) -> float:
        """The most errors the whole window may hold."""
        return self.per_minute * self.window_seconds / 60

    def __str__(self) -> str:
        return f"{self.per_minute:g}/{_duration(self.window_seconds)}"


ErrorRules = Mapping[str, ErrorRule]

DEFAULT_ERROR_RULES: ErrorRules = MappingProxyType(
    {
        "link_downed": ErrorRule(0, 600),
        "link_error_recovery": ErrorRule(0.5, 600),
        "symbol_error": ErrorRule(10, 300),
        "port_rcv_errors": ErrorRule(10, 300),
        "port_rcv_remote_physical_errors": ErrorRule(10, 300),
        "local_link_integrity_errors": ErrorRule(1, 300),
        "excessive_buffer_overrun_errors": ErrorRule(1, 300),
    }
)
INFORMATION_ONLY = ("port_xmit_discards", "port_rcv_discards")
"""Counters that grow under normal congestion: reported, never judged."""

_RULE = re.compile(r"(?P<rate>\d+(\.\d+)?)/(?P<window>\d+)(?P<unit>[smh])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600}
_SYNTAX = (
    "expected COUNTER=RATE/WINDOW (errors per minute over a window like 30s, 5m or 1h) "
    "or COUNTER=off"
)


class ErrorRuleError(ValueError):
    """An error threshold that cannot be used; the message names it."""


def parse_error_threshold(text: str) -> tuple[str, ErrorRule | None]:
    """A counter and its rule from `COUNTER=RATE/WINDOW`, or None for `COUNTER=off`."""
    name, equals, value = text.partition("=")
    if not equals:
        raise ErrorRuleError(f"{text!r}: {_SYNTAX}")
    if name in INFORMATION_ONLY:
        raise ErrorRuleError(
            f"{text!r}: {name} grows under normal congestion; it is information only"
        )
    judged = [c for c in ERROR_COUNTERS if c not in INFORMATION_ONLY]
    if name not in judged:
        expected = ", ".join(judged)
        raise ErrorRuleError(f"{text!r}: unknown counter {name!r}, expected one of {expected}")
    if value == "off":
        return name, None
    rule = _RULE.fullmatch(value)
    if rule is None:
        raise ErrorRuleError(f"{text!r}: {_SYNTAX}")
    window = int(rule["window"]) * _UNIT_SECONDS[rule["unit"]]
    if window == 0:
        raise ErrorRuleError(f"{text!r}: the window must be longer than 0{rule['unit']}")
    return name, ErrorRule(float(rule["rate"]), window)


def error_rules(
    overrides: Iterable[tuple[str, ErrorRule | None]], base: ErrorRules = DEFAULT_ERROR_RULES
) -> ErrorRules:
    """`base` with each override applied in order (None: the counter is no longer judged)."""
    rules = dict(base)
    for name, rule in overrides:
        if rule is None:
            rules.pop(name, None)
        else:
            rules[name] = rule
    return MappingProxyType(rules)


def _duration(seconds: float) -> str:
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size:g}{unit}"
    return f"{seconds:g}s"
