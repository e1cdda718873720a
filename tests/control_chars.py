"""The characters fetch.CONTROL refuses, one of each kind, that the tests of every place refusing one enumerate."""

CHARS = {
    "BEL": "\x07",
    "NEL": "\x85",
    "CSI": "\x9b",
    "line separator": "\u2028",
    "paragraph separator": "\u2029",
    **{f"bidi U+{c:04X}": chr(c) for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]},
}
