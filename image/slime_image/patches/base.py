"""What every patch shares: its outcome, source edits located by ast positions, and safe writes."""

from __future__ import annotations

import ast
import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path

from slime_image.errors import UserError

# plan() answers WOULD_APPLY (with the edits), ALREADY_APPLIED, NOT_NEEDED or ERROR; only the writer, after
# writing every edit, reports APPLIED.
WOULD_APPLY, APPLIED, ALREADY_APPLIED, NOT_NEEDED, ERROR = (
    "would-apply",
    "applied",
    "already-applied",
    "not-needed",
    "error",
)
GOOD = {APPLIED, ALREADY_APPLIED, NOT_NEEDED}


@dataclass
class Outcome:
    status: str
    message: str
    edits: dict[Path, str] = field(default_factory=dict)  # file -> its full new text
    patch: tuple[tuple[Path, ...], Path, int] | None = None  # or (patch series, tree, -p strip count) for `git apply`
    fix: str | None = None  # what mends it, where that is not the patch's update (a tree not found: sweep 10 U7)


def parsed(path: Path) -> tuple[str, ast.Module] | Outcome:
    """The text of the file a patch reads and its tree, or the ERROR outcome naming why it has none: it cannot be
    read, is not UTF-8, or does not parse (a patch then changes nothing)."""
    try:
        text = path.read_text()
        return text, ast.parse(text, str(path))
    except OSError as exc:
        return Outcome(ERROR, f"cannot read {path}: {exc.strerror}")
    except UnicodeDecodeError as exc:
        return Outcome(ERROR, f"cannot read {path}: not UTF-8 text ({exc.reason} at byte {exc.start})")
    except SyntaxError as exc:
        return Outcome(ERROR, f"{path}:{exc.lineno}: does not parse: {exc.msg}")


def first_statement(func: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.stmt:
    """The first statement of `func` after its docstring (the docstring itself where it is all the body): where a
    line added at the top of the body goes."""
    first = func.body[0]
    docstring = (
        isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)
    )
    return func.body[1] if docstring and len(func.body) > 1 else first


def char_offset(lines: list[str], lineno: int, col: int) -> int:
    """ast gives 1-based lines and UTF-8 byte columns; return an index into the joined text."""
    before = sum(len(line) for line in lines[: lineno - 1])
    return before + len(lines[lineno - 1].encode()[:col].decode())


def replace_node_span(text: str, first: ast.AST, last: ast.AST, replacement: str, whole_lines: bool) -> str:
    """Replace the source from `first` to `last` (whole lines when asked) with `replacement`."""
    lines = text.splitlines(keepends=True)
    if whole_lines:
        start = sum(len(line) for line in lines[: first.lineno - 1])
        end = sum(len(line) for line in lines[: last.end_lineno])
    else:
        start = char_offset(lines, first.lineno, first.col_offset)
        end = char_offset(lines, last.end_lineno, last.end_col_offset)
    return text[:start] + replacement + text[end:]


def compile_check(path: Path, text: str) -> str | None:
    """None when the new text compiles, else the error (nothing is written then)."""
    if path.suffix != ".py":
        return None
    try:
        compile(text, str(path), "exec", dont_inherit=True)
    except SyntaxError as exc:
        return f"{path}:{exc.lineno}: the patched file would not compile: {exc.msg}"
    return None


def package_folder(package: str) -> Path | None:
    """The folder of an importable top-level package. Under setuptools' editable install a namespace package's
    locations may hold only the finder's path hook, not a folder (Megatron-LM's `megatron`, of which the install
    maps `megatron.core` alone); the folder is then found through the finder's mapping of its subpackages."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    folders = [Path(f) for f in (spec.submodule_search_locations or []) if Path(f).is_dir()] if spec else []
    if folders or spec is None:
        return folders[0] if folders else None
    for finder in sys.meta_path:
        mapping = getattr(sys.modules.get(getattr(finder, "__module__", "")), "MAPPING", None)
        for name, folder in (mapping or {}).items() if isinstance(mapping, dict) else ():
            if name.startswith(package + ".") and Path(folder).is_dir():
                return Path(folder).parents[name.count(".") - 1]
    return None


def check_root(option: str, root: Path | None, package: str) -> None:
    """A root the user names must be the checkout that holds the package, or whatever reads it would miss its files."""
    if root is not None and not (root / package).is_dir():
        what = "is not a folder" if not root.is_dir() else f"holds no {package}/ package folder"
        raise UserError(
            f"{option} {root} {what}, so it is not a {package} checkout",
            f"pass {option} the folder that holds {package}/ (in the image: /opt/slime)"
            if package == "slime"
            else f"pass {option} the folder that holds {package}/, or leave it out to use the importable one",
        )


def importable_root(package: str) -> Path | None:
    """The folder holding an importable package (a checkout for Megatron-LM, site-packages for sglang)."""
    folder = package_folder(package)
    return folder.parent if folder else None
