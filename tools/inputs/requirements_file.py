"""slime's requirements.txt read as pip reads a requirements file, the one reader of it (pairings draft, through
upstream_release): slime is installed --no-deps, so what it lists is what the image must install itself, and a line
read otherwise than pip reads it is a requirement lost or invented (sweep 10 W1: `-r extra.txt`, a `\\` continuation
and an `--index-url` line were drafted as requirements, which the pairings' schema then refused, and extra.txt's were
lost; W2: a requirements.txt that was a folder, or none, was drafted as no requirement at all, so nothing was checked).

What pip reads as a requirement is one; what it follows where it is well defined (a `\\` joins a line to the next, a
`#` at a line's start or after a blank begins a comment, `-r FILE` reads FILE from the including file's folder) is
followed, inside the slime tree; every other line (an option such as `-c` or `--index-url`, an editable, a path or URL
that names no package, `${VAR}` that pip fills from the installing machine) is refused naming its file and line."""

from __future__ import annotations

import codecs
import os
import re
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from slime_image.errors import UserError
from slime_image.fetch import USERINFO, escape
from slime_image.lock_file import as_typed
from slime_image.patches.upstream import refuse_link_out
from slime_image.quoted import cut, redacted

from tools import tree_reads
from tools.inputs import pep440, url_form

# The byte-order marks pip's reader of a requirements file decodes by, longest first (UTF-32's begin as UTF-16's).
BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# pip's: a `#` at a line's start or after a blank; one inside a word (a URL's fragment) begins none. Written with a
# look-behind: `(^|\s+)#` tried every start of a run of blanks anew: a 200 KB line of them took minutes (sweep 11 H1).
COMMENT = re.compile(r"(?:^|(?<=\s))#.*")
COMMENT_LINE = re.compile(r"\s*#")
INCLUDE = re.compile(r"(?:-r\s*|--requirement(?:\s*=\s*|\s+))(?P<file>\S+)")
ENV_VAR = re.compile(r"\$\{[A-Z0-9_]+\}")  # what pip expands from the environment it runs in
FIX = "write it as a requirement (PEP 508: name[extra]>=1.0) or an -r FILE of the tree, then commit and tag it again"


URL_FORM = "a URL with no USER:PASSWORD@ and no ?QUERY"


def url_problem(requirement: Requirement) -> str | None:
    """Why a requirement's URL may not be kept in a pairing, or None: the one rule of the draft that reads slime's
    requirements.txt and of the schema that reads the pairing. A user name or password, or a query (a presigned
    download's signature, a token), went into slime_requires and `pairings check` printed it (sweep 11 W2). A fragment
    is never sent (pip's #sha256=), so it is kept."""
    if not requirement.url:
        return None
    if USERINFO.match(requirement.url):
        return "carries a user name or password in its URL"
    if (found := url_form.query_or_fragment(requirement.url)) and found[0] == "a query":
        return f"carries a query in its URL ({found[1]})"
    return None


def echoed(line: str) -> str:
    """A line as a message says it, in `backquotes`: each URL through the one redaction (url_form.shown: a user and
    password, a query's values and a fragment as ***) and each control character escaped (sweep 11 W2: a refused
    `-f https://u:pw@...` was echoed with its password; U3: an ESC or NUL reached the terminal raw); a long one cut,
    its length said (sweep 12 T1: a version of 5000 digits was echoed whole)."""
    return "`" + cut(escape(redacted(line))) + "`"


def text(path: Path) -> str:
    """A text file of the slime tree as pip reads a requirements file: a byte-order mark read and dropped (sweep 6 U5:
    a BOM'd requirements.txt was drafted as `\\ufeffnumpy`), else UTF-8; text of neither refused naming the file."""
    data = tree_reads.read_bytes(path, "put back the file its commit holds (git checkout -- FILE in the slime tree)")
    bom, encoding = next(((b, e) for b, e in BOMS if data.startswith(b)), (b"", "utf-8"))
    try:
        return data[len(bom) :].decode(encoding)
    except UnicodeDecodeError as exc:
        line = data[: len(bom) + exc.start].count(b"\n") + 1
        raise UserError(
            f"{as_typed(path)}:{line}: not {encoding.upper()} text ({exc.reason})",
            "save it as UTF-8 text (a byte-order mark may begin it, as pip reads it), then commit and tag it again",
            code=2,
        ) from None


def logical_lines(path: Path) -> list[tuple[int, str]]:
    """(first line number, text) of each line pip reads: continuations joined, comments and blank lines left out."""
    joined: list[str] = []
    first = 0
    lines = []
    for number, line in enumerate(text(path).splitlines(), 1):
        if line.endswith("\\") and not COMMENT_LINE.match(line):
            first = first if joined else number
            joined.append(line.strip("\\"))
            continue
        if COMMENT_LINE.match(line):  # a comment line ends a continuation, and is dropped whole
            line = " " + line
        lines.append((first, "".join([*joined, line])) if joined else (number, line))
        joined = []
    if joined:
        lines.append((first, "".join(joined)))
    return [(n, kept) for n, line in lines if (kept := COMMENT.sub("", line).strip())]


def _file(path: Path, tree: Path, named: str) -> None:
    """Refuse `path` (`named`: the line that names it, if any) unless it is a regular file of the tree."""
    inside = Path(os.path.abspath(tree))
    if not Path(os.path.abspath(path)).is_relative_to(inside):
        raise UserError(
            f"{named}{as_typed(path)} is outside the slime tree {tree}: no part of the release",
            "list slime's requirements in files of its tree, then commit and tag it again",
            code=2,
        )
    refuse_link_out(tree, path)
    if path.is_dir():
        why = "is a folder, not a requirements file"
    elif not path.exists():
        why = "does not exist"
    elif not path.is_file():
        why = "is no regular file"
    else:
        return
    raise UserError(
        f"{named}{as_typed(path)} {why}: slime's requirements are unknown (slime is installed --no-deps, so nothing "
        "would check that the image installs them)",
        "draft from a checkout of a slime release whose requirements.txt is a file, as its releases ship it",
        code=2,
    )


def read(path: Path, tree: Path) -> tuple[list[str], list[Path]]:
    """The requirements `path` lists, -r files followed, each once; and the files read, `path` first."""
    found: dict[str, tuple[str, str]] = {}  # canonical name -> (the line, where it is)
    files: list[Path] = []

    def follow(file: Path, named: str) -> None:
        _file(file, tree, named)
        if file.resolve() in (f.resolve() for f in files):
            raise UserError(
                f"{named}{as_typed(file)} is read already: the -r files include each other",
                "remove the -r line that includes a file read already (the loop), then commit and tag it again",
                code=2,
            )  # sweep 11 U1: the fix said to write a requirement, which does not end the loop
        files.append(file)
        for number, line in logical_lines(file):
            where = f"{as_typed(file)}:{number}"
            if ENV_VAR.search(line):
                raise UserError(
                    f"{where}: {echoed(line)} holds {ENV_VAR.search(line)[0]}, which pip fills from the machine it "
                    "runs on",
                    FIX,
                    code=2,
                )
            if include := INCLUDE.fullmatch(line):
                if "://" in include["file"]:
                    raise UserError(f"{where}: {echoed(line)} includes a URL, no file of the slime tree", FIX, code=2)
                follow(file.parent / include["file"], f"{where}: ")
                continue
            if line.startswith("-"):
                raise UserError(f"{where}: {echoed(line)} is an option of pip's, not a requirement", FIX, code=2)
            requirement, why = pep440.parsed(Requirement, line)
            if requirement is None:
                raise UserError(f"{where}: {echoed(line)} is not a requirement pip reads by name: {why}", FIX, code=2)
            if why := url_problem(requirement):
                raise UserError(
                    f"{where}: {echoed(line)} {why}, which the pairing, `pairings check` and the build's log would "
                    "show",
                    f"name the package by its name and version (PEP 508: name>=1.0), or by {URL_FORM}, then commit and "
                    "tag it again",
                    code=2,
                )
            name = canonicalize_name(requirement.name)
            if name in found:
                raise UserError(
                    f"{where}: {echoed(line)} names {name} again ({echoed(found[name][0])} at {found[name][1]})",
                    "name each requirement once, then commit and tag it again",
                    code=2,
                )
            found[name] = (line, where)

    follow(path, "")
    return [line for line, _ in found.values()], files
