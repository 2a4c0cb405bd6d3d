"""Reading a file of Kubernetes objects as kubectl takes them: YAML documents, or JSON for a
`.json` file. One reader for the extender's cluster snapshots, the fake apiserver's and the
webhook's stand-in Namespaces, so that each says the same of a broken file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import yaml


class DocumentError(ValueError):
    """A file that cannot be read as documents; the message says why, without the path."""


def read_documents(path: Path) -> list[Any]:
    """The YAML (or, for `.json`, JSON) documents of `path`."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise DocumentError(f"not UTF-8 text (byte {e.start})") from None
    except OSError as e:
        raise DocumentError(f"cannot read it: {e.strerror or e}") from None
    if path.suffix.lower() == ".json":
        try:
            return [orjson.loads(text)]
        except orjson.JSONDecodeError as e:
            raise DocumentError(f"not valid JSON: {e}") from None
    try:
        return list(yaml.safe_load_all(text))
    except yaml.YAMLError as e:
        raise DocumentError(f"not valid YAML: {_yaml_problem(e)}") from None


def _yaml_problem(error: yaml.YAMLError) -> str:
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        mark = error.problem_mark
        return f"{error.problem} (line {mark.line + 1}, column {mark.column + 1})"
    return str(error).splitlines()[0]
