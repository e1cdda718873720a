"""The one guard where the tools parse a PEP 440 version or version specifier, or a PEP 508 requirement, out of a
pairing or out of upstream's files (the pairing schema, pairings draft's reader of slime's requirements.txt, the
name of a pairing as a version, the router wheel pin_downloads pins): text of no such form is refused by packaging with
its Invalid* errors, and a run of more digits than Python converts to one int (4300 by default) with a bare ValueError,
which every reader of a pairing met as a traceback (sweep 12 T1). Both are "not of the form" here, said in words."""

from __future__ import annotations

import sys
from typing import TypeVar

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

Parsed = TypeVar("Parsed", Version, SpecifierSet, Requirement)
PACKAGING = (InvalidVersion, InvalidSpecifier, InvalidRequirement)


def parsed(kind: type[Parsed], value: str) -> tuple[Parsed | None, str]:
    """(kind(value), "") or (None, why it is not one)."""
    try:
        found = kind(value)
        # A prefix match (`==1.<5000 digits>.*`) parses with no int made, and raised once matched: match it here.
        (found.specifier if isinstance(found, Requirement) else found).contains("0") if kind is not Version else None
        return found, ""
    except PACKAGING as exc:
        return None, str(exc).splitlines()[0]
    except ValueError:  # int()'s limit on a run of digits; its own words advise raising the limit, no fix here
        limit = sys.get_int_max_str_digits()
        return None, f"it holds a run of more than {limit} digits, more than any version's number"


def fits(kind: type[Parsed], value: str) -> bool:
    return parsed(kind, value)[0] is not None
