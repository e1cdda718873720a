"""The one guard where the tools parse a PEP 440 version or version specifier, or a PEP 508 requirement, out of a
pairing or out of upstream's files (the pairing schema, pairings draft's reader of slime's requirements.txt, the
name of a pairing as a version, the router wheel pin_downloads pins): text of no such form is refused by packaging with
its Invalid* errors, and a run of more digits than Python converts to one int (4300 by default) with a bare ValueError,
which every reader of a pairing met as a traceback (sweep 12 T1). Both are "not of the form" here, said in words. The
run of digits is held to slime_image.digit_runs' rule, the lock reader's, over the whole text before packaging reads
it: packaging makes no int of a prefix match (`==1.<5000 digits>.*`, sweep 13 T1) nor of a marker's version (sweep 14
T3) until a version is matched against it or the marker evaluated, in the planner or in pip."""

from __future__ import annotations

from typing import TypeVar

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version
from slime_image import digit_runs

Parsed = TypeVar("Parsed", Version, SpecifierSet, Requirement)
PACKAGING = (InvalidVersion, InvalidSpecifier, InvalidRequirement)


def parsed(kind: type[Parsed], value: str) -> tuple[Parsed | None, str]:
    """(kind(value), "") or (None, why it is not one)."""
    if why := digit_runs.too_long(value):
        return None, why
    try:
        return kind(value), ""
    except PACKAGING as exc:
        return None, str(exc).splitlines()[0]


def fits(kind: type[Parsed], value: str) -> bool:
    return parsed(kind, value)[0] is not None
