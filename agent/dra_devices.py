"""Which device of this node's ResourceSlices is which RDMA NIC of the scan.

A DRA driver publishes a node's NICs as devices of its ResourceSlices (resource.k8s.io), each
named by the driver and described by attributes. The agent finds its scanned NICs among them by
the identifiers the drivers publish (checked against their sources and published slices, see
tests/fixtures/dra and webhook/dra/representatives.py):

- PCI address: `resource.kubernetes.io/pciBusID` (the standard attribute), `<domain>/pciAddress`
  (dranet's `dra.net/pciAddress`, the SR-IOV driver's `pciAddress`), and dranet's older split
  `dra.net/pciAddress{Domain,Bus,Device,Function}`;
- RDMA device: `<domain>/rdmaDevice` (dranet);
- netdev: `<domain>/ifName` (dranet).

A device matches a NIC when one identifier is the NIC's and none contradicts it (a PCI address,
RDMA device or netdev the NIC does not have). A NIC that matches no device is not published by
any driver; a NIC that matches two devices, or a device that matches two NICs, is ambiguous:
either is skipped with its reason, so bad data on one device never reaches another.

Slices are read whole or refused: a slice that does not have the API's shape is refused with
the field and the reason, and the node's other slices are still read. Of a pool's slices only
those of its newest generation count, as kube-scheduler's allocator reads them (older ones are
left over from a pool update). v1beta1 (Kubernetes 1.32) nests a device's attributes under
`basic`; later versions hold them on the device.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kube_rdma.core.objects import Json
from kube_rdma.core.topology import Nic

STANDARD = "resource.kubernetes.io"
PCI_BUS_ID = f"{STANDARD}/pciBusID"
_PCI_SPLIT = ("pciAddressDomain", "pciAddressBus", "pciAddressDevice", "pciAddressFunction")
_VALUE_TYPES = {"string": str, "int": int, "bool": bool, "version": str}


class SliceError(ValueError):
    """A ResourceSlice the agent cannot read; the message names the slice, field and reason."""


@dataclass(frozen=True)
class DeviceId:
    """A device as a DeviceTaintRule selects it: driver, pool and name, exactly."""

    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


@dataclass(frozen=True)
class Published:
    """One device of a slice and the identifiers it carries."""

    id: DeviceId
    pci: frozenset[str] = frozenset()
    rdma: frozenset[str] = frozenset()
    netdevs: frozenset[str] = frozenset()


@dataclass
class NodeDevices:
    """What this node's slices publish: the devices, and the slices refused."""

    devices: list[Published] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    """One line per slice refused; while any is, a device not seen may be in it."""


def node_devices(slices: Iterable[Json]) -> NodeDevices:
    """The devices of `slices` (this node's), refusing each unreadable slice alone."""
    read: list[tuple[str, str, int, list[Published]]] = []
    result = NodeDevices()
    for obj in slices:
        try:
            read.append(read_slice(obj))
        except SliceError as e:
            result.refused.append(str(e))
    newest: dict[tuple[str, str], int] = {}
    for driver, pool, generation, _ in read:
        newest[driver, pool] = max(generation, newest.get((driver, pool), generation))
    for driver, pool, generation, devices in read:
        if generation == newest[driver, pool]:
            result.devices += devices
    return result


def read_slice(obj: Json) -> tuple[str, str, int, list[Published]]:
    """(driver, pool, pool generation, devices) of one ResourceSlice; SliceError otherwise."""
    name = (obj.get("metadata") or {}).get("name") if isinstance(obj, dict) else None
    where = f"ResourceSlice {name or '(unnamed)'}"
    spec = expect_object(obj.get("spec") if isinstance(obj, dict) else None, where, "spec")
    driver = expect_string(spec.get("driver"), where, "spec.driver")
    pool = expect_object(spec.get("pool"), where, "spec.pool")
    pool_name = expect_string(pool.get("name"), where, "spec.pool.name")
    generation = pool.get("generation", 0)
    if not isinstance(generation, int) or isinstance(generation, bool):
        raise SliceError(f"{where}: spec.pool.generation: expected an integer, got {generation!r}")
    devices = spec.get("devices")
    devices = [] if devices is None else devices
    if not isinstance(devices, list):
        raise SliceError(f"{where}: spec.devices: expected a list, got {type(devices).__name__}")
    published = [
        _device(d, driver, pool_name, where, f"spec.devices[{i}]") for i, d in enumerate(devices)
    ]
    return driver, pool_name, generation, published


def _device(obj: Any, driver: str, pool: str, where: str, at: str) -> Published:
    device = expect_object(obj, where, at)
    name = expect_string(device.get("name"), where, f"{at}.name")
    holder = device
    if "basic" in device:  # v1beta1 nests them
        holder, at = expect_object(device["basic"], where, f"{at}.basic"), f"{at}.basic"
    attributes = holder.get("attributes")
    attributes = expect_object({} if attributes is None else attributes, where, f"{at}.attributes")
    values = attribute_values(attributes, driver, where, at)
    return Published(
        DeviceId(driver, pool, name),
        pci=frozenset(pci_addresses(values, where, at)),
        rdma=frozenset(strings(values, "rdmaDevice")),
        netdevs=frozenset(strings(values, "ifName")),
    )


def attribute_values(
    attributes: Mapping[str, Any], driver: str, where: str, at: str
) -> dict[str, object]:
    """A device's attributes by qualified name, each its one value; SliceError otherwise."""
    return {
        _qualified(key, driver): _value(attribute, where, f'{at}.attributes["{key}"]')
        for key, attribute in attributes.items()
    }


def _qualified(key: str, driver: str) -> str:
    """An attribute's name with its domain: a bare name is the driver's own."""
    return key if "/" in key else f"{driver}/{key}"


def _value(attribute: Any, where: str, at: str) -> object:
    """The one value of a DeviceAttribute (`{"string": ...}`, `int`, `bool` or `version`)."""
    attribute = expect_object(attribute, where, at)
    if len(attribute) != 1 or next(iter(attribute)) not in _VALUE_TYPES:
        raise SliceError(
            f"{where}: {at}: expected exactly one of string, int, bool, version, "
            f"got {sorted(attribute) or 'none'}"
        )
    kind, value = next(iter(attribute.items()))
    wanted = _VALUE_TYPES[kind]
    if not isinstance(value, wanted) or (wanted is int and isinstance(value, bool)):
        raise SliceError(f"{where}: {at}.{kind}: expected a {kind}, got {value!r}")
    return value


def strings(values: Mapping[str, object], name: str) -> list[str]:
    return [v for k, v in values.items() if k.rpartition("/")[2] == name and isinstance(v, str)]


def pci_addresses(values: Mapping[str, object], where: str, at: str) -> list[str]:
    found = [pci_address(v) for v in strings(values, "pciAddress")]
    standard = values.get(PCI_BUS_ID)
    if isinstance(standard, str):
        found.append(pci_address(standard))
    for domain in {k.rpartition("/")[0] for k in values if k.endswith("/" + _PCI_SPLIT[0])}:
        parts = [values.get(f"{domain}/{part}") for part in _PCI_SPLIT]
        if all(isinstance(p, str) for p in parts):
            found.append(pci_address("{}:{}:{}.{}".format(*parts)))
    if any(address is None for address in found):
        raise SliceError(f"{where}: {at}: a PCI address attribute is not DDDD:BB:DD.F")
    return [address for address in found if address]


def pci_address(text: str) -> str | None:
    """`0000:c8:00.0` (lower case, with a domain) from the forms drivers write; None when it is
    not one."""
    text = text.strip().lower()
    if text.count(":") == 1:
        text = "0000:" + text
    domain, _, rest = text.partition(":")
    bus, _, slot_function = rest.partition(":")
    slot, _, function = slot_function.partition(".")
    fields = (domain, bus, slot, function)
    if not all(fields) or not all(c in "0123456789abcdef" for c in "".join(fields)):
        return None
    return f"{int(domain, 16):04x}:{int(bus, 16):02x}:{int(slot, 16):02x}.{int(function, 16)}"


def expect_object(
    value: Any, where: str, at: str, error: type[Exception] = SliceError
) -> dict[str, Any]:
    """`value` if it is a JSON object; `error` naming where and what was found otherwise."""
    if not isinstance(value, dict):
        raise error(f"{where}: {at}: expected an object, got {_kind(value)}")
    return value


def expect_string(value: Any, where: str, at: str, error: type[Exception] = SliceError) -> str:
    """`value` if it is a non-empty string; `error` naming where and what was found otherwise."""
    if not isinstance(value, str) or not value:
        raise error(f"{where}: {at}: expected a non-empty string, got {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    return "nothing" if value is None else repr(value)


@dataclass(frozen=True)
class Matches:
    """NIC name -> its device; and why each NIC or device without one has none."""

    devices: dict[str, Published]
    skipped: list[str]
    unmatched: list[str]
    """NICs no device matches."""


def match(nics: Sequence[Nic], devices: Sequence[Published]) -> Matches:
    """Each NIC's one device, or the reason it has none (none or several; a device that matches
    several NICs is given to none of them)."""
    candidates = {nic.name: [d for d in devices if _matches(nic, d)] for nic in nics}
    claimed: dict[DeviceId, list[str]] = {}
    for name, found in candidates.items():
        for device in found:
            claimed.setdefault(device.id, []).append(name)
    found_devices: dict[str, Published] = {}
    skipped: list[str] = []
    for name, found in candidates.items():
        if len(found) > 1:
            listed = ", ".join(str(d.id) for d in found)
            skipped.append(f"NIC {name} matches {len(found)} published devices ({listed})")
        elif found and len(claimed[found[0].id]) > 1:
            named = ", ".join(claimed[found[0].id])
            skipped.append(f"device {found[0].id} matches several NICs ({named})")
        elif found:
            found_devices[name] = found[0]
    unmatched = [name for name, found in candidates.items() if not found]
    return Matches(found_devices, sorted(set(skipped)), unmatched)


def _matches(nic: Nic, device: Published) -> bool:
    netdevs = {p.netdev for p in nic.ports if p.netdev}
    pci = {address} if nic.pci and (address := pci_address(nic.pci)) else set()
    checks = ((device.pci, pci), (device.rdma, {nic.name}), (device.netdevs, netdevs))
    if any(published and mine and not published & mine for published, mine in checks):
        return False  # an identifier of another NIC
    return any(published & mine for published, mine in checks)
