"""slime's own patches to Megatron-LM and SGLang (wall W20), applied as slime's image applies them.

slime ships `docker/patch/<sglang version>/megatron.patch` and `sglang.patch`; from v0.3.1 on SGLang's is a series,
`sglang.patch` then `sglang-*.patch` files, each written on top of the earlier ones. Their order is a fact of slime's
own image recipe, `docker/Dockerfile`, which names them in the order it applies them: it is read from there (the tree
in the image), not kept here. slime's Dockerfile applies the folder PATCH_VERSION names, `latest` by default.
An unpatched Megatron silently ignores arguments slime sets (`disable_grad_buffers_cpu_backup` under
--offload-train); an unpatched SGLang lacks endpoints slime calls (`/post_process_weights`). The patches come from
the slime tree in the image; none is kept in this repository.

Applied with `git apply` (GNU patch rejects a hunk git takes): megatron.patch in the Megatron-LM tree (paths
a/megatron/...), SGLang's in the folder holding the installed `sglang` package (paths a/python/sglang/..., so -p2).
A series is applied patch by patch in order and reversed last patch first. A series whose reverse applies cleanly
is already applied.
"""

from __future__ import annotations

import errno
import hashlib
import importlib.metadata
import os
import re
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from slime_image import git
from slime_image.errors import UserError
from slime_image.patches.base import ALREADY_APPLIED, ERROR, NOT_NEEDED, WOULD_APPLY, Outcome

PATCH_ROOT = Path("docker/patch")
FALLBACK = "latest"  # what slime's Dockerfile picks when PATCH_VERSION is not given
ORDER_SOURCE = Path("docker/Dockerfile")  # slime's image recipe: it names its patch files in the order it applies them
# The one form of a patch file's name and of its folder's, wherever one enters: a series declared (a pairing's
# SLIME_PATCHES, the build argument slime-patch --series takes), a slime tree's docker/patch/, its Dockerfile's names.
# A series is words apart, so a name with a space was split into two (sweep 9 F9: `my fix.patch@...` was "not a
# series", a folder `my folder` was taken, and slime-patch --series over a tree holding `sglang-my fix.patch` ended
# in a traceback).
PATCH_FILE = re.compile(r"\w[\w.-]*\.patch")  # a named file; a glob (`sglang*.patch`) names none
PATCH_FOLDER = re.compile(r"\w[\w.+-]*")  # v<an SGLang version> or latest
FILE_FORM = "letters, digits and . _ -, ending .patch, no space"
FOLDER_FORM = "letters, digits and . _ + -, as v0.5.15.post1 or latest, no space"


@dataclass(frozen=True)
class Choice:
    folder: Path | None
    why: str
    order: tuple[str, ...] = ()  # the patch files slime's Dockerfile applies, in its order


def slime_order(slime_root: Path) -> tuple[str, ...]:
    """The patch files slime's own docker/Dockerfile names, in the order it names (and applies) them; none when the
    tree has no Dockerfile."""
    recipe = slime_root / ORDER_SOURCE
    if not recipe.is_file():
        return ()
    return tuple(dict.fromkeys(PATCH_FILE.findall(recipe.read_text(errors="replace"))))


def refuse_link_out(tree: Path, *paths: Path) -> None:
    """Refuse a file of the slime tree that is a link out of it, or a link loop: what it points at is no part of the
    release (sweep 5 U10: a patch linked to /etc/passwd was hashed into a drafted series; sweep 6 U10: slime-patch took
    it, the series matching /etc/passwd's hash, and applied it). Every reader of slime's patches asks here: pairings
    draft and series on the host, slime-patch in the image."""
    inside = Path(os.path.realpath(tree))
    for path in paths:
        try:
            target = Path(os.path.realpath(path, strict=True))
        except FileNotFoundError:
            target = Path(os.path.realpath(path))  # nothing there (or a dangling link): its reader says so
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            raise UserError(
                f"{path} is a link loop (its links lead back to each other), in the slime tree {tree}: no file of the "
                "release",
                _own_files(tree, path),
                code=2,
            ) from None
        if not target.is_relative_to(inside):
            raise UserError(
                f"{path} is a link to {target}, outside the slime tree {tree}: no part of the release",
                _own_files(tree, path),
                code=2,
            )


def _own_files(tree: Path, path: Path) -> str:
    relative = os.path.relpath(path, tree)
    return (
        f"pass a checkout of the release whose files are its own (git -C {tree} checkout -- {relative}, or a fresh "
        "git clone --branch TAG)"
    )


def sglang_version(sglang_root: Path) -> str | None:
    """The version of the sglang distribution installed in the folder that holds the `sglang` package."""
    for dist in importlib.metadata.distributions(path=[str(sglang_root)]):
        if dist.metadata["Name"].lower() == "sglang":
            return dist.version
    return None


def is_folder(tree: Path, path: Path) -> bool:
    """Whether the slime tree `tree` holds a folder at `path` (inside it, as docker/patch/latest): False where nothing
    is there. What is there but no folder, at `path` or a folder above it (a link loop, a link to nothing, a file, a
    FIFO), is refused, as patch_files refuses such a patch file: read as no folder, slime's patches for SGLang were
    said "not needed" (sweep 14 W5). Every reader of the patch folders asks here: choose (slime-patch, slime-record)
    and pairings draft."""
    for each in [*reversed(path.relative_to(tree).parents[:-1]), path.relative_to(tree)]:
        place = tree / each
        if not os.path.lexists(place):
            return False
        refuse_link_out(tree, place)
        if not place.is_dir():
            raise UserError(
                f"{place} is {_kind(place)}, not the folder a release of slime holds there: none of its patches "
                "could be read",
                _own_files(tree, place),
                code=2,
            )
    return True


def _kind(path: Path) -> str:
    """What `path`, there but no folder, is in a message's words."""
    if not path.exists():
        return f"a link to {os.readlink(path)}, which leads nowhere"
    mode = path.stat().st_mode
    kinds = {stat.S_ISREG: "a file", stat.S_ISFIFO: "a FIFO", stat.S_ISSOCK: "a socket"}
    return next((kind for test, kind in kinds.items() if test(mode)), "a device")


def choose(slime_root: Path, version: str | None) -> Choice:
    """slime's patch folder for this SGLang version, else the one slime's own Dockerfile would apply."""
    base = slime_root / PATCH_ROOT
    order = slime_order(slime_root)
    if version:
        for name in (f"v{version}", version):
            if is_folder(slime_root, base / name):
                return Choice(base / name, f"{PATCH_ROOT / name} (for the installed SGLang {version})", order)
    if is_folder(slime_root, base / FALLBACK):
        return Choice(
            base / FALLBACK,
            f"{PATCH_ROOT / FALLBACK}: no folder for SGLang {version or '(not installed)'}, so the one slime's "
            "own Dockerfile applies by default",
            order,
        )
    return Choice(
        None, f"{slime_root} has no {PATCH_ROOT}/ folder for SGLang {version or '(not installed)'} and no {FALLBACK}/"
    )


def touched(series: tuple[Path, ...], strip: int) -> set[str]:
    """The tree paths a series' patches change, from their `diff --git a/<path> b/<path>` lines."""
    found = set()
    for patch in series:
        for line in patch.read_text(errors="replace").splitlines():
            if line.startswith("diff --git "):
                found.add("/".join(line.split()[2].split("/")[strip:]))
    return found


def _apply(tree: Path, strip: int, *args: str, **kwargs) -> subprocess.CompletedProcess:
    """`git apply` in `tree` as a plain folder: in a repository's subfolder (a venv's site-packages in a checkout),
    git takes the patch's paths from the repository's top and skips, rc 0, each outside the subfolder (sweep 8 N1:
    `applied`, nothing changed); --git-dir=/dev/null names no repository, so none is looked for."""
    return git.run("--git-dir=/dev/null", "apply", f"-p{strip}", *args, cwd=tree, capture_output=True, **kwargs)


def _in_order(ordered: list[Path], tree: Path, strip: int, flags: list[str]) -> subprocess.CompletedProcess:
    """`git apply` each patch in turn; on a failure, undo the ones this call applied."""
    done: list[Path] = []
    proc = subprocess.CompletedProcess([], 0, "", "")
    for patch in ordered:
        proc = _apply(tree, strip, *flags, str(patch), text=True, timeout=300)
        if proc.returncode != 0:
            undo = [f for f in flags if f != "--reverse"] + ([] if "--reverse" in flags else ["--reverse"])
            for earlier in reversed(done):
                _apply(tree, strip, *undo, str(earlier))
            return proc
        done.append(patch)
    return proc


def git_apply(series: tuple[Path, ...], tree: Path, strip: int, *flags: str) -> subprocess.CompletedProcess:
    """Apply a patch series in order, each patch on the result of the ones before (one `git apply` of several files
    does not chain patches to one file); with --reverse, last patch first. With --check, the series is applied to a
    scratch copy of the files it touches, so a later patch is checked against the earlier ones' result."""
    ordered = list(reversed(series)) if "--reverse" in flags else list(series)
    if "--check" not in flags:
        return _in_order(ordered, tree, strip, list(flags))
    with tempfile.TemporaryDirectory() as scratch:
        for relative in touched(series, strip):
            if (tree / relative).is_file():
                (Path(scratch) / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(tree / relative, Path(scratch) / relative)
        return _in_order(ordered, Path(scratch), strip, [f for f in flags if f != "--check"])


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class UpstreamPatch:
    """A series of slime's patch files, in the order slime applies them, and the tree it applies to."""

    ID: str
    TARGET: str  # which root the CLI passes: megatron_root or sglang_root
    first: str  # always shipped; then the `<its stem>-*.patch` files the folder has, in slime's order
    strip: int
    WALLS = ("W20",)
    RETIRES = (
        "`already-applied` when the series applies in reverse; `not-needed`, with a warning, when slime ships no patch "
        "for the installed SGLang"
    )

    @property
    def CHANGES(self) -> str:
        tree = "Megatron-LM" if self.TARGET == "megatron_root" else "the installed SGLang"
        return (
            f"slime's own `docker/patch/<sglang version>/{self.first}`, then the `{self.stem}-*.patch` files there, "
            f"in the order slime's `{ORDER_SOURCE}` applies them, applied to {tree} with `git apply -p{self.strip}`"
        )

    @property
    def stem(self) -> str:
        return self.first.removesuffix(".patch")

    def plan(self, tree: Path, slime_root: Path, choice: Choice) -> Outcome:
        if choice.folder is None:
            return Outcome(NOT_NEEDED, f"NO UPSTREAM PATCH: {choice.why}")
        if not (choice.folder / self.first).is_file():
            return Outcome(NOT_NEEDED, f"NO UPSTREAM PATCH: {choice.why} holds no {self.first}")
        later = {p.name for p in choice.folder.glob(f"{self.stem}-*.patch")}
        unordered = sorted(later - set(choice.order))
        if unordered:
            return Outcome(
                ERROR,
                f"{choice.why} holds {', '.join(unordered)}, which slime's {ORDER_SOURCE} does not apply: where it "
                "goes in the series is unknown; nothing changed",
            )
        series = (choice.folder / self.first, *(choice.folder / f for f in choice.order if f in later))
        named = ", ".join(f"{p.relative_to(slime_root)} (sha256 {sha256(p)[:12]})" for p in series)
        where = f"{named} in {tree}"
        forward = git_apply(series, tree, self.strip, "--check")
        if forward.returncode == 0:
            return Outcome(WOULD_APPLY, f"apply {where}; chosen: {choice.why}", {}, patch=(series, tree, self.strip))
        if git_apply(series, tree, self.strip, "--check", "--reverse").returncode == 0:
            return Outcome(ALREADY_APPLIED, f"{where}")
        # The image's own patches run after these and may rewrite a context line (Megatron's arguments.py):
        # what it added is still in place when the reverse applies with its changed lines alone.
        if git_apply(series, tree, self.strip, "--check", "--reverse", "-C0", "--unidiff-zero").returncode == 0:
            return Outcome(
                ALREADY_APPLIED, f"{where} (its lines are in place; a later patch changed lines around them)"
            )
        problem = "; ".join(line for line in forward.stderr.strip().splitlines() if line.startswith("error:"))
        return Outcome(ERROR, f"{where} does not apply, nothing changed: {problem or forward.stderr.strip()}")


# A declared series (the pairing's SLIME_PATCHES build argument): the patch folder's name, then each file in slime's
# order with the first 16 hex digits of its sha256.
DIGEST_PREFIX = 16


def name_problem(name: str, folder: bool = False) -> str | None:
    """Why `name` is no patch file's name (a patch folder's, with `folder`), or None."""
    if (PATCH_FOLDER if folder else PATCH_FILE).fullmatch(name):
        return None
    return f"{name!r} is no patch {'folder' if folder else 'file'}'s name ({FOLDER_FORM if folder else FILE_FORM})"


def parse_series(text: str) -> tuple[str, list[tuple[str, str]]]:
    """'v0.5.15.post1: megatron.patch@976fd8bbe1f4e386 sglang.patch@...' -> (folder, [(file, sha256 prefix)]); a
    ValueError saying why not. Words without an @ belong to the next one's name, so that a name with a space is
    refused as a name, naming it."""
    folder, colon, rest = text.partition(":")
    entries, pending = [], []
    for word in rest.split():
        if "@" not in word:
            pending.append(word)
            continue
        entries.append(" ".join([*pending, word]).rpartition("@"))
        pending = []
    if (
        not colon
        or not folder.strip()
        or not entries
        or pending
        or any(not (at and re.fullmatch(f"[0-9a-f]{{{DIGEST_PREFIX}}}", d)) for _, at, d in entries)
    ):  # lower case, as sha256sum writes it: an upper-case prefix was taken, then "not the series" (sweep 8 N9)
        raise ValueError(f"its form is FOLDER: FILE@SHA256PREFIX ... ({DIGEST_PREFIX} lower-case hex digits each)")
    files = [f for f, _, _ in entries]
    if why := name_problem(folder.strip(), folder=True) or next(filter(None, map(name_problem, files)), None):
        raise ValueError(why)
    twice = sorted({f for f in files if files.count(f) > 1})
    if twice:  # sweep 6 U9: read as "declared in another order than slime applies them"
        raise ValueError(f"it declares {', '.join(twice)} twice: a series names each patch file once")
    return folder.strip(), [(f, d) for f, _, d in entries]


def patch_files(folder: Path) -> list[Path]:
    """The patch files of a slime patch folder, by name, each named as a series can declare it: every reader of the
    folder (pairings draft and series, slime-patch, slime-record) asks here, so that one no series could declare is
    refused, naming it; so is a patch there that is no regular file (sweep 12 W6: a FIFO as sglang.patch was read as
    none, and every SGLang patch of the series passed as not needed). A link out of the slime tree or a link loop is
    named as such first (refuse_link_out: a loop was said as no regular file)."""
    found = sorted(folder.glob("*.patch"))
    refuse_link_out(folder.parents[len(PATCH_ROOT.parts)], folder, *found)  # the tree: a folder is TREE/PATCH_ROOT/NAME
    for path in [folder, *found]:
        if why := name_problem(path.name, folder=path == folder):
            raise UserError(
                f"{path}: {why}: no series could declare it",
                "pass a slime tree whose patch files are named as slime names its own (sglang-top_p.patch)",
                code=2,
            )
        if path != folder and not path.is_file():
            raise UserError(
                f"{path}: no regular file (a folder, a FIFO, a device or a socket), so no patch of the release",
                "pass a slime tree whose patch files are the release's own, as git checks them out",
                code=2,
            )
    return found


def declaration_of(folder: Path, order: tuple[str, ...]) -> str:
    """The series a patch folder holds, written as a declaration: its files in slime's order (`order`, read from
    slime's Dockerfile; those it does not name last, by name, so that they fail the comparison loudly rather than go
    unapplied)."""
    present = [p.name for p in patch_files(folder)]
    ordered = [f for f in order if f in present] + [f for f in present if f not in order]
    return f"{folder.name}: " + " ".join(f"{f}@{sha256(folder / f)[:DIGEST_PREFIX]}" for f in ordered)


def series_differences(choice: Choice, declared: str) -> list[str]:
    """How the chosen patch folder differs from the declared series: another folder, a file added or missing, a
    file changed, another order; empty when they are the same. A file slime's Dockerfile does not apply is named."""
    folder = choice.folder
    name, entries = parse_series(declared)
    if folder.name != name:
        return [f"slime chose {folder.name}/, but the pairing declares {name}/"]
    _, found = parse_series(declaration_of(folder, choice.order))
    want, have = dict(entries), dict(found)
    problems = [
        f"{f} is in {folder.name}/ but not declared"
        + ("" if f in choice.order else f", and slime's {ORDER_SOURCE} does not apply it")
        for f in have
        if f not in want
    ]
    problems += [f"{f} is declared but not in {folder.name}/" for f in want if f not in have]
    problems += [f"{f} is sha256 {have[f]}..., declared {want[f]}..." for f in want if f in have and have[f] != want[f]]
    if not problems and [f for f, _ in entries] != [f for f, _ in found]:
        problems.append(f"declared in another order than slime applies them: {' '.join(f for f, _ in found)}")
    return problems


UPSTREAM = [
    UpstreamPatch("slime-megatron-patch", "megatron_root", "megatron.patch", 1),
    UpstreamPatch("slime-sglang-patch", "sglang_root", "sglang.patch", 2),
]
