"""Which kind of device a DeviceClass gives, judged by evaluating its CEL selectors.

The webhook reads no ResourceSlices, so it evaluates a class's selectors (with the request's
own, all of which must hold, as kube-scheduler's allocator applies them) against representative
devices of the drivers it knows (`representatives`), with the project's shared CEL evaluation
(`kube_rdma.core.dra.selectors`). A representative's kind is the extender's (`kube_rdma.core.
dra.kinds`: a `gpu.nvidia.com` device of `type: gpu`, a `dra.net` device with `rdma: true`, an
SR-IOV VF with `rdmaCapable: true`), unless the profile lists its driver in `gpuDrivers` or
`nicDrivers`, which makes every device of that driver that kind.

- The selectors accept representatives of one kind only: the class gives that kind.
- They accept representatives of several kinds (`device.driver == "dra.net"` takes the ENA as
  well as the EFA): neither, with a warning, since the allocator may give either.
- They accept none: evaluated again on each representative stripped to its driver and the
  attribute its kind is decided by, so that a class pinning a value no representative has
  (`productName == "NVIDIA H100 80GB HBM3"`, a VF's admin-set `resourceName`) still counts.
- A selector that errors on a device (an attribute it lacks, unguarded) leaves open whether the
  class takes it: the device counts as possibly accepted. One that errors on every device, or
  does not compile, makes the class neither, with a warning naming it.

Results are remembered per selector list for as long as the profile is loaded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import Enum

from kube_rdma.core.dra.kinds import DEFAULT_KIND_RULES, kind_of
from kube_rdma.core.dra.selectors import SelectorError, Selectors
from kube_rdma.core.dra.shapes import Device
from webhook.dra.device_kind import DeviceKind
from webhook.dra.representatives import REPRESENTATIVES, Representative

_KINDS = {"gpu": DeviceKind.GPU, "nic": DeviceKind.NIC}


class Outcome(Enum):
    ACCEPTS = "accepts"
    REJECTS = "rejects"
    ERRORS = "errors"


@dataclass(frozen=True)
class Verdict:
    kind: DeviceKind | None
    problem: str = ""
    """Why the class counts as neither kind although it may give one ("" when it need not be
    said)."""


class ClassKinds:
    """Judges selector lists against the representatives; one per profile."""

    def __init__(
        self,
        gpu_drivers: Iterable[str] = (),
        nic_drivers: Iterable[str] = (),
        representatives: Sequence[Representative] = REPRESENTATIVES,
    ) -> None:
        self._drivers = {d: DeviceKind.GPU for d in gpu_drivers} | {
            d: DeviceKind.NIC for d in nic_drivers
        }
        known = {r.device.driver for r in representatives}
        listed = [
            Representative(f"a device of driver {d}", Device(d, "", "", {}))
            for d in self._drivers
            if d not in known
        ]
        self._full = (*representatives, *listed)
        self._bare = _stripped(self._full)
        self._selectors = Selectors()
        self._verdicts: dict[tuple[str, ...], Verdict] = {}

    def kind(self, device: Device) -> DeviceKind | None:
        listed = self._drivers.get(device.driver)
        if listed is not None:
            return listed
        found = kind_of(device, DEFAULT_KIND_RULES)
        return _KINDS[found] if found else None

    def verdict(self, selectors: tuple[str, ...]) -> Verdict:
        found = self._verdicts.get(selectors)
        if found is None:
            found = self._verdicts[selectors] = self._judge(selectors)
        return found

    def outcome(self, selectors: Sequence[str], device: Device) -> Outcome:
        """All selectors hold, one is false, or (none false) one errors."""
        errored = False
        for expression in selectors:
            judged = self._selectors.judge([expression], device)
            if judged is False:
                return Outcome.REJECTS
            errored = errored or judged is not True
        return Outcome.ERRORS if errored else Outcome.ACCEPTS

    def _possible(
        self, selectors: Sequence[str], representatives: Iterable[Representative]
    ) -> list[Representative]:
        return [
            r for r in representatives if self.outcome(selectors, r.device) is not Outcome.REJECTS
        ]

    def _judge(self, selectors: tuple[str, ...]) -> Verdict:
        try:
            for expression in selectors:
                self._selectors.check(expression)
        except SelectorError as e:
            return Verdict(None, _compile_error(e))
        outcomes = [(r, self.outcome(selectors, r.device)) for r in self._full]
        if selectors and all(o is Outcome.ERRORS for _, o in outcomes):
            return Verdict(
                None,
                "its selectors fail to evaluate on every device kube-rdma knows (an attribute "
                "read without has() or a driver check), as kube-scheduler's allocator would",
            )
        possible = [r for r, o in outcomes if o is not Outcome.REJECTS]
        if not possible:
            possible = self._possible(selectors, self._bare)
        kinds = {self.kind(r.device) for r in possible}
        if len(kinds) <= 1:
            return Verdict(kinds.pop() if kinds else None)
        return Verdict(None, f"it may give {_examples(possible, self.kind)}")


def _stripped(representatives: Sequence[Representative]) -> tuple[Representative, ...]:
    """Each representative with only its driver and the attributes its kind is decided by."""
    decisive = {rule.attribute for rule in DEFAULT_KIND_RULES}
    seen: dict[tuple[str, tuple[tuple[str, object], ...]], Representative] = {}
    for r in representatives:
        kept = {n: v for n, v in r.device.attributes.items() if n in decisive}
        key = (r.device.driver, tuple(sorted(kept.items())))
        if key not in seen:
            label = f"a {r.device.driver} device" + "".join(
                f" with {n.rpartition('/')[2]} {str(v).lower()}" for n, v in key[1]
            )
            seen[key] = Representative(label, Device(r.device.driver, "", "", kept))
    return tuple(seen.values())


def _examples(
    representatives: Sequence[Representative], kind: Callable[[Device], DeviceKind | None]
) -> str:
    """`GPUs (a GB300 GPU) and other devices (a MIG device)`: each kind with its first device."""
    first: dict[DeviceKind | None, str] = {}
    for r in representatives:
        first.setdefault(kind(r.device), r.label)
    order = [DeviceKind.GPU, DeviceKind.NIC, None]
    return " and ".join(
        f"{k.value + 's' if k else 'other devices'} ({first[k]})" for k in order if k in first
    )


def _compile_error(error: SelectorError) -> str:
    """The shared evaluation's message, with the column where cel-python's parser stopped
    (its error is the expression over a caret line)."""
    lines = str(error.__cause__ or "").splitlines()
    if len(lines) >= 2 and lines[1].strip() == "^":
        return f"{str(error).partition(':')[0]} (the parser stops at column {len(lines[1])})"
    return str(error)
