"""The one reader of NAME=VALUE build arguments, as `docker build --build-arg` takes them, for every command given them:
the plan (--build-arg), make build and the verification build (--build-arg, BUILD_ARGS) and pin_downloads
(--build-arg NAME=URL). Each bad form has one message whatever the command: no '=', no NAME before it or one of no
ARG's form, a NAME given twice (the last would win silently), a *_URL value that is no URL, a host list that is none
(url_form: each would fail only at the download), the two cases of one proxy variable given two values
(url_form.cases_problem). What a command then allows of a well-formed one is its own to say.
"""

from __future__ import annotations

import re
import shlex

from slime_image.errors import UserError
from slime_image.fetch import CONTROL
from slime_image.quoted import cut, quoted

from tools.inputs import url_form

FIX = "write each build argument as NAME=VALUE, such as PIP_INDEX_URL=https://pypi.org/simple (a value may be empty)"
# An ARG's name as a Dockerfile declares one, and as every ARG of slime.Dockerfile and every engine's proxy is.
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NAME_WIDTH = 100  # past any ARG's name: a longer one is cut where a message names it


def named(name: str) -> str:
    """A build argument's NAME, in its form (NAME), as a message names it: cut past NAME_WIDTH (sweep 14 W8: a NAME of
    3000 characters was printed whole, twice)."""
    return cut(name, NAME_WIDTH)


def parsed(words: list[str]) -> dict[str, str]:
    """NAME -> VALUE of `words`, in their order; a UserError naming the first word in a bad form. A word is quoted()
    (redacted, cut) wherever a message shows it, and a NAME is held to its form first: it was printed whole, a URL's
    password with it (sweep 14 W8)."""
    given: dict[str, str] = {}
    for word in words:
        name, sep, value = word.partition("=")
        if not sep:
            raise UserError(f"build argument {quoted(word)} has no '=': it is no NAME=VALUE", FIX)
        if not name:
            raise UserError(f"build argument {quoted(word)} has no NAME before its '='", FIX)
        if not NAME.fullmatch(name):
            raise UserError(
                f"build argument {quoted(word)} has a NAME that is no ARG's: an ARG is named with letters, digits and "
                "_, not starting with a digit",
                FIX,
            )
        if name in given:  # neither value shown: either may hold a password
            raise UserError(
                f"build argument {named(name)} is given twice: the last would win unsaid", f"give {named(name)} once"
            )
        if value and (found := url_form.refused(name, value)):  # empty: the ARG unset, as its default leaves it
            raise UserError(f"build argument {named(name)}={found[0]} {found[1]}", found[2])
        given[name] = value
    if found := url_form.cases_problem(given):
        raise UserError(f"build arguments {found[0]}", found[1])
    return given


def words(build_arg: list[str], build_args: str) -> list[str]:
    """The NAME=VALUE words of the --build-arg options, then of --build-args (make's BUILD_ARGS, read as shell words so
    that a quoted value stays one)."""
    try:
        split = shlex.split(build_args)
    except ValueError:
        raise UserError(f"BUILD_ARGS: {unsplit(build_args)}", "close each quote in BUILD_ARGS") from None
    # BUILD_ARGS is passed on verbatim by its parser (passes_on), whose refusal of a control character named the
    # option --build-args, not the variable its user typed (sweep 14 U8); a blank between words is a separator.
    for word in split:
        if bad := CONTROL.search(word):
            raise UserError(
                f"BUILD_ARGS holds {bad.group()!r} in its word {quoted(word)}, a control character no build argument "
                "holds",
                "give BUILD_ARGS without it",
            )
    return [*build_arg, *split]


def unsplit(text: str) -> str:
    """Why shlex cannot split `text`, by the position of the quote left open (or of the last backslash) and the NAME of
    the word it stands in, never the text: a value holds a password or a query's token, which the error echoed whole
    (sweep 12 U9)."""
    quote, start, word = None, 0, 0
    at = 0
    while at < len(text):
        char = text[at]
        if quote == "'":
            quote = None if char == "'" else quote
        elif quote == '"':
            at += char == "\\"
            quote = None if char == '"' else quote
        elif char == "\\":
            at += 1
        elif char in "'\"":
            quote, start = char, at
        elif char.isspace():
            word = at + 1
        at += 1
    name, equals, _ = text[word:].partition("=")
    where = f" (in the value of {name})" if equals and name.isidentifier() else ""
    if quote is None:
        return f"its last character, a backslash, escapes nothing{where}"
    return f"the quote {quote} at character {start + 1} is never closed{where}"


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
