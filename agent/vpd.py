"""PCI Vital Product Data: the read-only keywords of a function's VPD, as the kernel reads them.

A PCI function with a VPD capability has a `vpd` file in sysfs (mode 0600: only root reads
it). Its bytes are resource items, walked as the kernel's drivers/pci/vpd.c does
(pci_vpd_find_tag, pci_vpd_find_info_keyword):
- a large item is a tag byte with bit 7 set and a 16-bit little-endian length, then its data;
  0x82 is the identifier string (the product name), 0x90 the read-only section (VPD-R);
- a small item (bit 7 clear) ends the walk; the only one a VPD holds is the end tag, 0x78;
- the read-only section is a run of keywords: two ASCII characters, a length byte, the value
  (`SN` the serial number, `V3` and `VU` vendor-specific, `RV` the checksum).
"""

from __future__ import annotations

import os
from pathlib import Path

LARGE_ITEM = 0x80
READ_ONLY = 0x90
HEADER = 3
MAX_BYTES = 0x8000
"""PCI_VPD_MAX_SIZE: a VPD address is 15 bits."""


class VpdError(ValueError):
    """The VPD's bytes are not what the PCI specification lays out; the message says where."""


def read_vpd(path: Path) -> bytes:
    """The VPD file's bytes; OSError when it cannot be read (EACCES when not root)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        size = 0
        while size < MAX_BYTES:
            chunk = os.read(fd, MAX_BYTES - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_only_keywords(data: bytes) -> dict[str, str]:
    """The keywords of the read-only section and their values as text, trailing blanks cut
    (ConnectX cards pad their serial numbers with spaces); the checksum (`RV`) left out."""
    start, length = _read_only_section(data)
    keywords: dict[str, str] = {}
    at, end = start, start + length
    while at + HEADER <= end:
        name = data[at : at + 2].decode("ascii", errors="replace")
        size = data[at + 2]
        value = data[at + HEADER : at + HEADER + size]
        if at + HEADER + size > end:
            raise VpdError(f"keyword {name!r} runs past the end of the read-only section")
        if name != "RV":
            keywords[name] = value.decode("ascii", errors="replace").rstrip(" \x00")
        at += HEADER + size
    return keywords


def _read_only_section(data: bytes) -> tuple[int, int]:
    """Where the read-only section's keywords start, and their length."""
    at = 0
    while at + HEADER <= len(data) and data[at] & LARGE_ITEM:
        tag = data[at]
        length = int.from_bytes(data[at + 1 : at + HEADER], "little")
        at += HEADER
        if tag == READ_ONLY:
            return at, min(length, len(data) - at)
        at += length
    if not data:
        raise VpdError("empty")
    raise VpdError("no read-only section (large resource tag 0x90)")
