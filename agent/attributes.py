"""Reading kernel attribute files (sysfs, procfs), and the error for one the agent cannot use.

A scan reads thousands of tiny files, so reads are unbuffered os-level calls. A file that cannot
be read is an answer, not a failure: absent (an older kernel, a driver not loaded) or EINVAL (an
unused GID table entry). A file that holds something the agent cannot interpret is a failure
whose message names the file; so is a file the agent cannot do without (`read_required`), whose
message says why the read failed (EACCES, EIO, a device that went away).
"""

from __future__ import annotations

import os
from pathlib import Path


class SysfsError(Exception):
    """sysfs holds something the agent cannot interpret; the message names the file."""


def read_attribute(path: Path | str) -> str | None:
    """The file's text, stripped; None when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, 4096).decode(errors="replace").strip()
    except OSError:
        return None
    finally:
        os.close(fd)


def read_required(path: Path | str) -> str:
    """The file's text, stripped; SysfsError naming the file and the reason when unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            return os.read(fd, 4096).decode(errors="replace").strip()
        finally:
            os.close(fd)
    except OSError as e:
        raise SysfsError(f"{path}: cannot read: {e.strerror}") from e
