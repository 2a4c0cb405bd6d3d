"""How the frameworks' index labels are read: a label value is text."""

from __future__ import annotations


def index(text: str | None) -> int | None:
    """An index label's value as a number; None when it is absent or not a whole number."""
    return int(text) if text is not None and text.isdigit() else None
