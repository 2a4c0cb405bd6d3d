"""ConnectX-8 Data Direct: the PCI function a NIC reaches GPU memory through.

On ConnectX-8 with Data Direct (GB300, Vera Rubin NVL72), a NIC does its DMA to and from GPU
memory through a PCI function of its own, PCI ID 15b3:2100 ("ConnectX-8 Data Direct" in the
kernel's drivers/infiniband/hw/mlx5/data_direct.c). That function sits under the GPU's PCIe
switch; the NIC's own function hangs from another root port. So a GPU's PCIe distance to such a
NIC is its distance to the Data Direct function. NCCL measures it the same way: with
NCCL_IB_DATA_DIRECT on (its default) it places the NIC at the path that
mlx5dv_get_data_direct_sysfs_path returns (src/transport/net_ib/init.cc).

Which NIC a function serves is recognised by function, never by model name:
- The kernel: mlx5_data_direct_probe reads the function's VPD keyword `VU`
  (mlx5_data_direct_vpd_get_vuid; a function without one is refused), and
  mlx5_data_direct_ib_reg binds every mlx5 RDMA device whose firmware reports the same string
  (mlx5_ib_data_direct_init, mlx5_core_query_vuid with data_direct set; compared with strcmp).
  The RDMA device's side comes from a firmware command: no sysfs file holds it, and no sysfs
  attribute links the device to its function (only the GET_DATA_DIRECT_SYSFS_PATH ioctl,
  drivers/infiniband/hw/mlx5/std_types.c).
- From sysfs, as rdma-core's rdma_topo does (kernel-boot/rdma_topo, __get_nvcx_complex): the
  function's VPD keyword `V3`, the adapter's UUID, equals the `V3` in the VPD of the NIC's own
  functions (all functions of one adapter carry it).

So a function counts when its VPD holds a `VU` (the kernel uses it) and a `V3` that a NIC's
functions carry. Only Mellanox functions are candidates (the kernel binds mlx5 devices only).
Anything else is a warning, and the NIC pairs through its own function as on any other node,
which on these trays is the wrong pairing, so the warning says how to fix it: a VPD that can be
read neither from sysfs (the file is root's) nor from the init container's keywords file
(agent/vpd_keywords.py), one without those keywords, a `V3` that no NIC carries, two functions
that claim one NIC.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path

from agent.attributes import read_attribute
from agent.pci import PciFunction, Problems, pci_function
from agent.vpd import VpdError
from agent.vpd_keywords import MELLANOX, VpdReader, VpdUnreadable, data_direct_present

log = logging.getLogger("kube_rdma.agent")

FALLBACK = "its NIC pairs with GPUs through the NIC's own function"
UNMATCHABLE = "no Data Direct function can be matched to it"


def data_direct_functions(
    root: Path,
    nics: Mapping[str, PciFunction],
    problems: Problems | None,
    reader: VpdReader | None = None,
) -> dict[str, PciFunction]:
    """The Data Direct function each NIC (by RDMA device name) reaches GPU memory through,
    where it has one; VPDs read by `reader` (sysfs alone by default). What cannot be matched
    goes to `problems`, or to the log without a list: it never fails a scan."""

    def warn(message: str) -> None:
        if problems is None:
            log.warning("scan: %s", message)
        else:
            problems.append(message)

    directories = {name: root / "bus/pci/devices" / f.address for name, f in nics.items()}
    found = {}
    for name, path in find_data_direct(root, directories, warn, reader or VpdReader()).items():
        function = pci_function(root, path, problems)
        if function is not None:
            found[name] = function
    return found


def find_data_direct(
    root: Path, nics: Mapping[str, Path], warn: Callable[[str], None], reader: VpdReader
) -> dict[str, Path]:
    """For each NIC (RDMA device name -> its PCI function's directory) that a Data Direct
    function serves, that function's directory; `warn` hears what could not be matched."""
    functions = data_direct_present(root)
    if not functions:
        return {}
    adapters = _adapter_ids(nics, warn, reader)
    claims: dict[str, list[Path]] = {}
    for function in functions:
        for name in _served(function, adapters, warn, reader):
            claims.setdefault(name, []).append(function)
    found = {}
    for name, claimants in claims.items():
        if len(claimants) == 1:
            found[name] = claimants[0]
            continue
        addresses = " and ".join(f.name for f in claimants)
        warn(
            f"{name}: Data Direct functions {addresses} carry its adapter's V3; "
            "it pairs with GPUs through its own function"
        )
    return found


def _adapter_ids(
    nics: Mapping[str, Path], warn: Callable[[str], None], reader: VpdReader
) -> dict[str, str]:
    """Each NIC's adapter UUID (VPD `V3`). A NIC of another vendor, without a VPD file (a
    VF) or without `V3` is no candidate; one whose VPD cannot be read is named."""
    ids = {}
    for name, function in nics.items():
        if read_attribute(function / "vendor") != MELLANOX or not (function / "vpd").exists():
            continue
        try:
            keywords = reader.keywords(function)
        except (VpdUnreadable, VpdError) as e:
            warn(f"{name}: {e}; {UNMATCHABLE}")
            continue
        if keywords.get("V3"):
            ids[name] = keywords["V3"]
    return ids


def _served(
    function: Path, adapters: Mapping[str, str], warn: Callable[[str], None], reader: VpdReader
) -> list[str]:
    """The NICs `function` serves; none, with a warning, when it cannot be matched."""
    where = f"{function.name} (ConnectX-8 Data Direct)"
    try:
        keywords = reader.keywords(function)
    except (VpdUnreadable, VpdError) as e:
        warn(f"{where}: {e}; {FALLBACK}")
        return []
    if "VU" not in keywords:
        warn(f"{where}: its VPD has no VU keyword, so the mlx5 driver does not use it; {FALLBACK}")
        return []
    adapter = keywords.get("V3")
    if not adapter:
        warn(f"{where}: its VPD has no V3 keyword to find its NIC by; {FALLBACK}")
        return []
    served = sorted(name for name, nic_adapter in adapters.items() if nic_adapter == adapter)
    if not served:
        warn(f"{where}: no NIC's VPD carries its V3 {adapter!r}; {FALLBACK}")
    return served
