"""Reading kernel attribute files (sysfs, procfs), and the error for one the agent cannot use.

A scan reads thousands of tiny files, so reads are unbuffered os-level calls. A file that cannot
be read is an answer, not a failure: absent (an older kernel, a driver not loaded) or EINVAL (an
unused GID table entry). A file that holds something the agent cannot interpret is a failure
whose message names the file.
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
