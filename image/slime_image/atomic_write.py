"""Write files so that readers see the old content or the new, never half of it, and several files all or none;
check first that they can be written."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from slime_image.errors import UserError, interrupts_held
from slime_image.fetch import nearest_there
from slime_image.lock_file import as_typed

# The files this process has put in place through write_all, in order: run_command's message on Ctrl-C names them.
# (A single file written with write_atomically is whole or absent, and most are caches, not what a command makes.)
WRITTEN: list[Path] = []


def _stage(path: Path, text: str | None) -> str:
    """A temporary file beside `path` holding `text` (None: a copy of `path` as it is), with `path`'s mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    # realpath: tempfile abspaths its folder, reading `link/..` as text; the file must lie where the rename puts it
    fd, tmp = tempfile.mkstemp(dir=os.path.realpath(path.parent), prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as handle:
            if text is not None:
                handle.write(text)
        if text is None:
            shutil.copyfile(path, tmp)
        os.chmod(tmp, mode)
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


@contextlib.contextmanager
def _naming(path: Path) -> Iterator[None]:
    """An OSError of writing `path` names `path` as its user typed it: the system names the temporary file beside it
    (or, for a failed rename, both), which the user never asked for and which is gone when the message is read."""
    try:
        yield
    except OSError as exc:
        if exc.errno is None:
            raise
        raise OSError(exc.errno, exc.strerror, str(as_typed(path))) from None


def _special(path: Path) -> bool:
    """A target that is not a file to replace: a device or a pipe (--json /dev/null). Renaming over it would put a
    regular file where the device was, for every process of the machine; it is written in place instead."""
    return path.exists() and not path.is_file() and not path.is_dir()


def _write_in_place(path: Path, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


def write_all(files: dict[Path, str]) -> None:
    """Write every file of `files` (path -> text) or none of them.

    Each is staged beside its target first, with a copy of the target as it was, so a folder that cannot take a file
    fails here, before any target changes; then all are renamed into place, and a rename that fails puts back the ones
    already renamed. Ctrl-C waits for the end, so it never leaves a staged file behind or half the targets renamed."""
    files = {Path(path): text for path, text in files.items()}
    special = {path: files.pop(path) for path in list(files) if _special(path)}
    with interrupts_held():
        staged: list[tuple[Path, str, str | None]] = []  # target, new text's file, the old content's copy
        try:
            for path, text in files.items():
                with _naming(path):
                    old = _stage(path, None) if path.is_file() else None
                    staged.append((path, _stage(path, text), old))
            done: list[tuple[Path, str | None]] = []
            try:
                for path, new, old in staged:
                    with _naming(path):
                        os.replace(new, path)
                    done.append((path, old))
            except BaseException:
                for path, old in reversed(done):
                    if old is None:
                        path.unlink()
                    else:
                        os.replace(old, path)
                raise
            WRITTEN.extend(path for path, _ in done)
            for path, text in special.items():
                with _naming(path):
                    _write_in_place(path, text)
        finally:
            for _, new, old in staged:
                for leftover in (new, old):
                    if leftover is not None and os.path.lexists(leftover):
                        os.unlink(leftover)


def write_atomically(path: Path, text: str) -> None:
    """Write `text` to a temporary file beside `path`, keep `path`'s mode, then rename it into place; Ctrl-C waits
    for the end, so it never leaves the temporary file behind."""
    path = Path(path)
    with _naming(path):
        if _special(path):
            _write_in_place(path, text)
            return
        with interrupts_held():
            tmp = _stage(path, text)
            try:
                os.replace(tmp, path)
            except BaseException:
                os.unlink(tmp)
                raise


def check_writable(option: str, path: Path | str | None) -> None:
    """Fail before the work starts when `write_atomically` could not write `path` (None and - mean stdout).

    Missing folders are fine (they are created). What is asked of the target is what the write will do, tried now:
    a device or a pipe takes a write of nothing (/dev/full refuses it, as it will the report), and the folder that
    will hold a file takes a new file (one under /proc or /sys, or on a read-only mount, does not, even for root,
    whom os.access answers yes). A link is refused: the rename would put a file in its place (/dev/stdout with stdout
    sent to a file: the probes see the file it leads to). A file where a folder must be, a folder, or either probe
    failing is a UserError naming the option."""
    if path is None or str(path) == "-":
        return
    if str(path).endswith(os.sep):
        raise UserError(f"{option} {path}: a folder, and it takes a file", f"pass {option} a file name: {path}NAME")
    target = Path(path)
    if target.is_symlink():  # sweep 5 D1: /dev/stdout, stdout sent to a file, became a regular file
        raise UserError(
            f"{option} {path}: a link (to {os.readlink(target)}), which the write would replace, not write where it "
            "leads",
            f"pass {option} the file itself, not a link to it",
        )
    fix = f"pass {option} a file in a writable folder"
    if _special(target):
        why = _takes_a_write(target)
        if why:
            raise UserError(f"{option} {path}: cannot be written ({why})", fix)
        return
    if target.is_dir():
        raise UserError(
            f"{option} {path}: cannot write a file there: it is a folder", f"pass {option} a file, not a folder"
        )
    there, dangling = nearest_there(
        os.path.dirname(os.path.join(os.getcwd(), target))
    )  # `link/..` as the kernel reads it
    if dangling:
        raise UserError(f"{option} {path}: cannot write a file there ({dangling})", fix)
    existing = Path(there)
    if not existing.is_dir():
        raise UserError(f"{option} {path}: cannot write a file there", fix)
    why = _takes_a_file(Path(os.path.realpath(existing)))
    if why:
        raise UserError(f"{option} {path}: cannot write a file there ({existing}: {why})", fix)


def _takes_a_write(target: Path) -> str | None:
    """Why a device or pipe refuses a write, or None. A named pipe is refused, read or not: one nothing reads made the
    write wait without end, saying nothing (sweep 12 H1), and one with a reader is ended by the probe's own open and
    close, so the reader got nothing and the write waited again (sweep 13 H1: the advice to start the reader first led
    to that hang)."""
    if stat.S_ISFIFO(target.stat().st_mode):
        return "a named pipe: the output is written whole to a file, and a pipe's reader would get nothing or half"
    try:
        handle = os.open(target, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        return exc.strerror
    try:
        os.write(handle, b"")
    except OSError as exc:
        return exc.strerror
    finally:
        os.close(handle)
    return None


def _takes_a_file(folder: Path) -> str | None:
    """Why `folder` cannot hold a new file, or None; the probe has no name where the system allows (O_TMPFILE), and
    is gone when this returns."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            return None
    except OSError as exc:
        return exc.strerror or str(exc)


def check_outputs(outputs: dict[str, Path | str | None], inputs: dict[str, Path | str | None] | None = None) -> None:
    """Fail before the work starts on a command's outputs (option -> path; None: not asked, -: stdout) when they
    collide: two written to stdout would be mixed there, two options naming one file would leave only the later, and
    an output that is one of the command's `inputs` (what -> a file, or a folder it reads) or inside one would overwrite
    what the command reads; then check_writable on each file."""
    on_stdout = [option for option, path in outputs.items() if path is not None and str(path) == "-"]
    if len(on_stdout) > 1:
        raise UserError(
            f"{' and '.join(on_stdout)} would all write to stdout, one mixed into the other",
            f"send {' or '.join(on_stdout[1:])} to a file",
        )
    named: dict[str, tuple[str, Path | str]] = {}  # where each output lands -> its option and path as given
    for option, path in outputs.items():
        if path is None or str(path) == "-":
            continue
        _not_an_input(option, path, inputs or {})
        check_writable(option, path)
        _apart(option, path, named)
        named[os.path.realpath(path)] = (option, path)


def _apart(option: str, path: Path | str, named: dict[str, tuple[str, Path | str]]) -> None:
    """Refuse an output landing where an earlier one (`named`) does, inside it, or around it: every pair of a command's
    outputs, before either is made (sweep 8 N10: `--report-json q/r.json --report-junit q/r.json/x.xml` made the
    folder r.json for the second, then failed on the first, leaving both folders)."""
    written = os.path.realpath(path)
    for where, (other, given) in named.items():
        if written == where:
            raise UserError(
                f"{other} and {option} both name {path}: the later would overwrite the earlier",
                f"give {option} a file of its own",
            )
        pair = [(option, path, written), (other, given, where)]
        for (inner, inner_path, inside), (outer, outer_path, around) in (pair, pair[::-1]):
            if inside.startswith(around.rstrip("/") + "/"):
                raise UserError(
                    f"{inner} {inner_path} lies inside {outer} {outer_path}, a file the command writes: it cannot "
                    "be a folder too",
                    f"give {inner} a path outside {outer_path}",
                )


def _not_an_input(option: str, path: Path | str, inputs: dict[str, Path | str | None]) -> None:
    written = os.path.realpath(path)
    for what, given in inputs.items():
        if given is None or not str(given).strip() or str(given) == "-":
            continue
        read = os.path.realpath(given)
        if written == read:
            raise UserError(
                f"{option} {path} is {read_as(what, given)}, which the command reads: writing it would overwrite it",
                f"give {option} a file of its own, not {as_typed(Path(given))}",
            )
        if os.path.isdir(read) and written.startswith(read.rstrip("/") + "/"):
            raise UserError(
                f"{option} {path} is inside {read_as(what, given)}, which the command reads: what it writes there "
                "would go among it",
                f"give {option} a path outside {as_typed(Path(given))}/",
            )


def read_as(what: str, path: Path | str) -> str:
    """What a command reads, for a refusal of an output over it: `what` (an option, a description, a path of the
    clone) and its path as its user would type it (relative where it lies in the current folder), where `what` does not
    say it already."""
    shown = as_typed(Path(path))
    return what if what.rstrip("/") == str(shown) else f"{what} ({shown})"
