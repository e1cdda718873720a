"""The one parse of a pairing's TOML text, for every reader of one (pairing_schema.read, which every command reads a
pairing through first; download_pins.in_pairing, which finds the line of each pin; steps_digest, which reads the
pairing as git holds it). tomllib refuses text out of its grammar with TOMLDecodeError, but an integer of more digits
than Python converts (4300 by default) with the bare ValueError of int(), and arrays nested thousands deep with a
RecursionError: each ended in a traceback in every reader of a pairing (sweep 5 T1; sweep 14 T1: `EXTRA = <5000
digits>`). Here each is a UserError naming the file."""

from __future__ import annotations

import tomllib

from slime_image import digit_runs
from slime_image.errors import UserError


def loads(text: str, shown: object) -> dict:
    """The TOML of `text`, the file `shown` (as its user typed it), or a UserError naming it and why it is none."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{shown}: not TOML: {exc}", "fix the syntax the parser names, or remove the file") from None
    except ValueError:  # int()'s limit, which tomllib does not catch; its own words advise raising it
        raise UserError(
            f"{shown}: holds a number of more than {digit_runs.limit()} digits, longer than any value a pairing holds",
            "write each value of the pairing as its form asks (a version or a name as a quoted string), or remove it",
        ) from None
    except RecursionError:  # sweep 5 T1: arrays nested thousands deep
        raise UserError(f"{shown}: nests arrays or tables too deep to read", "write its values flat") from None
