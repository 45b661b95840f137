"""What the tamper detector finds in a text, by kind: the integrity tests' common reading."""

from __future__ import annotations

from guard.integrity.tamper import detect

__all__ = ["kinds"]


def kinds(text: str) -> set[str]:
    """The kinds of the detector's findings in `text`."""
    return {finding.kind for finding in detect(text)}
