"""sglang-lazy-imports (wall W56).

Every start of a rollout engine imports SGLang's engine module in several processes one after the other, and two of
its module-top imports serve features a slime job never runs: `sglang.srt.utils.common` imports torchvision's
`decode_jpeg` (for decoding a multimodal request's JPEG on the GPU), which loads torchvision whole, and
`sglang.srt.entrypoints.engine` imports the elastic-EP expert backup manager (started only under
--enable-elastic-expert-backup). The patch removes each such import from the module's top and imports the name
right before each statement that uses it, so the module loads without it. What that saves is for -X importtime in
the image to tell: read statically, `sglang.srt.configs` still imports torchvision (`nano_nemotron_vl` imports
`multimodal.internvl_utils`; 0.5.15.post1's `deepseek_ocr` too) and the scheduler module the engine imports still
imports what the backup manager does (model config, loader). SGLang 0.5.23 imports `decode_jpeg` where used itself.

Each use is found with ast. A move is refused, with nothing changed, when the name is used where the module's own
loading evaluates it (module or class body, a decorator, a default, an annotation), is bound otherwise in the
module or in a function that uses it, is listed in `__all__`, or is imported from this module by another module of
SGLang: each would lose the name. `sglang.srt.utils` star-imports `common`, so that last check covers it too.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from slime_image.patches.base import ALREADY_APPLIED, ERROR, NOT_NEEDED, WOULD_APPLY, Outcome

ID = "sglang-lazy-imports"
WALLS = ("W56",)
TARGET = "sglang_root"
CHANGES = (
    "the module-top imports of `decode_jpeg` (torchvision, in `sglang/srt/utils/common.py`) and of "
    "`run_expert_backup_manager` (the elastic-EP expert backup manager, in `sglang/srt/entrypoints/engine.py`) move "
    "to right before each statement that uses them, found with ast in 0.5.12.post1 and 0.5.15.post1 and refused "
    "where a use is evaluated when the module loads; the engine's import still reaches torchvision through "
    "`sglang.srt.configs` (`nano_nemotron_vl` imports `multimodal.internvl_utils`) and the backup manager's own "
    "imports through the scheduler, so only these two modules' own edges go"
)
RETIRES = (
    "per import: `not-needed` when SGLang already imports the name where it is used (`decode_jpeg` from 0.5.23 on)"
)
MARKER = "# slime-image W56: imported where it is used, not when the module loads"
PACKAGE = Path("sglang")


@dataclass(frozen=True)
class Move:
    file: Path  # relative to the folder holding the sglang package
    origin: str  # the module the name is imported from
    name: str

    @property
    def module(self) -> str:
        return ".".join(self.file.with_suffix("").parts)

    @property
    def line(self) -> str:
        return f"from {self.origin} import {self.name}"


MOVES = (
    Move(Path("sglang/srt/utils/common.py"), "torchvision.io", "decode_jpeg"),
    Move(
        Path("sglang/srt/entrypoints/engine.py"),
        "sglang.srt.elastic_ep.expert_backup_manager",
        "run_expert_backup_manager",
    ),
)


class Refused(Exception):
    """A shape the move does not know; its message says where."""


@dataclass
class Reading:
    top: ast.ImportFrom | None  # the module-top import to move
    due: list[ast.stmt]  # statements using the name that nothing imports it for once `top` is gone
    ours: bool  # some statement imports it with the marker


FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


class _Scan(ast.NodeVisitor):
    """The name's uses and bindings, each with the functions it sits in (innermost last) and its statement. A
    definition's decorators, defaults and annotations belong to the scope around it, as Python evaluates them."""

    def __init__(self, move: Move):
        self.move = move
        self.functions: list[ast.AST] = []
        self.classes: list[str] = []
        self.statement: ast.stmt | None = None
        self.uses: list[tuple[ast.Name, tuple, ast.stmt | None, bool]] = []  # node, functions, statement, in a class
        self.binds: list[tuple[ast.AST, tuple]] = []  # anything else that binds the name
        self.imports: list[tuple[ast.ImportFrom, tuple]] = []  # `from origin import name`

    def visit(self, node):
        if isinstance(node, ast.stmt):
            outer, self.statement = self.statement, node
            super().visit(node)
            self.statement = outer
        else:
            super().visit(node)

    def _header(self, node):
        for child in (*node.decorator_list, *getattr(node, "bases", ()), *getattr(node, "keywords", ())):
            self.visit(child)
        if hasattr(node, "args"):
            args = node.args
            for default in (*args.defaults, *(d for d in args.kw_defaults if d)):
                self.visit(default)
            every = (*args.posonlyargs, *args.args, *args.kwonlyargs, *filter(None, (args.vararg, args.kwarg)))
            for arg in every:
                if arg.annotation:
                    self.visit(arg.annotation)
            if getattr(node, "returns", None):
                self.visit(node.returns)

    def _function(self, node):
        if not isinstance(node, ast.Lambda):
            self._header(node)
            if node.name == self.move.name:
                self.binds.append((node, tuple(self.functions)))
        else:
            for default in (*node.args.defaults, *(d for d in node.args.kw_defaults if d)):
                self.visit(default)
        args = node.args
        params = (*args.posonlyargs, *args.args, *args.kwonlyargs, *filter(None, (args.vararg, args.kwarg)))
        self.functions.append(node)
        for arg in params:
            if arg.arg == self.move.name:
                self.binds.append((arg, tuple(self.functions)))
        outer, self.classes = self.classes, []
        for child in node.body if isinstance(node.body, list) else [node.body]:
            self.visit(child)
        self.classes = outer
        self.functions.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_ClassDef(self, node):
        self._header(node)
        if node.name == self.move.name:
            self.binds.append((node, tuple(self.functions)))
        self.classes.append(node.name)
        for child in node.body:
            self.visit(child)
        self.classes.pop()

    def visit_Name(self, node):
        if node.id != self.move.name:
            return
        if isinstance(node.ctx, ast.Load):
            self.uses.append((node, tuple(self.functions), self.statement, bool(self.classes)))
        else:
            self.binds.append((node, tuple(self.functions)))

    def _import(self, node):
        for alias in node.names:
            bound = alias.asname or alias.name.split(".")[0]
            if bound != self.move.name:
                continue
            ours = isinstance(node, ast.ImportFrom) and node.module == self.move.origin and not node.level
            if ours and not alias.asname and not self.classes:
                self.imports.append((node, tuple(self.functions)))
            else:
                self.binds.append((node, tuple(self.functions)))

    visit_Import = visit_ImportFrom = _import

    def visit_Global(self, node):
        if self.move.name in node.names:
            self.binds.append((node, tuple(self.functions)))

    visit_Nonlocal = visit_Global

    def _named(self, node):
        if node.name == self.move.name:
            self.binds.append((node, tuple(self.functions)))
        self.generic_visit(node)

    visit_ExceptHandler = visit_MatchAs = visit_MatchStar = _named


def _exported(tree: ast.Module, name: str) -> ast.stmt | None:
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        listed = any(isinstance(c, ast.Constant) and c.value == name for c in ast.walk(node))
        if listed and any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return node
    return None


def read(move: Move, text: str, where: str) -> Reading:
    """Where the name is imported and used in the module's text; Refused for a shape the move does not know."""
    tree = ast.parse(text, where)
    scan = _Scan(move)
    scan.visit(tree)
    lines = text.splitlines()
    if scan.binds:
        node = scan.binds[0][0]
        raise Refused(f"{where}:{node.lineno}: {move.name} is bound there other than by `{move.line}`")
    exported = _exported(tree, move.name)
    if exported:
        raise Refused(f"{where}:{exported.lineno}: {move.name} is listed in __all__, so other modules may import it")
    top = [node for node, functions in scan.imports if not functions]
    if len(top) > 1 or (top and top[0] not in tree.body):
        raise Refused(f"{where}:{top[-1].lineno}: `{move.line}` is not one statement at the module's top")
    if top and len(top[0].names) > 1:
        raise Refused(f"{where}:{top[0].lineno}: `{move.line}` shares its statement with other names")
    imported_in = {id(f) for node, functions in scan.imports if functions for f in functions[-1:]}
    due = []
    for node, functions, statement, in_class in scan.uses:
        if not functions or in_class:
            what = "a class body" if in_class else "the module's top"
            raise Refused(f"{where}:{node.lineno}: {move.name} is used in {what}, evaluated when the module loads")
        if any(id(f) in imported_in for f in functions):
            continue
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            raise Refused(f"{where}:{node.lineno}: {move.name} is used in a definition's header")
        line = lines[statement.lineno - 1]
        head = line.encode()[: statement.col_offset].decode()
        if head.strip() or line[len(head) :].startswith("elif"):
            raise Refused(
                f"{where}:{statement.lineno}: {move.name} is used in a statement that does not start its line"
            )
        if statement not in due:
            due.append(statement)
    if not top and due:
        raise Refused(f"{where}:{due[0].lineno}: {move.name} is used but imported nowhere in the module")
    if top and not scan.uses:
        # An import nothing uses may be there for what loading its module does.
        raise Refused(f"{where}:{top[0].lineno}: `{move.line}` is never used in the module")
    if top:
        after = lines[top[0].end_lineno - 1].encode()[top[0].end_col_offset :].decode().strip()
        if after and not after.startswith("#"):
            raise Refused(f"{where}:{top[0].lineno}: `{move.line}` shares its line with another statement")
    ours = any(line.strip() == f"{move.line}  {MARKER}" for line in lines)
    return Reading(top[0] if top else None, due if top else [], ours)


def importers(root: Path, move: Move) -> list[str]:
    """Other modules of the installed SGLang that take the name from the module it moves out of (or from anything
    but its origin: `sglang.srt.utils` re-exports `common` by a star import), as `file:line`."""
    found = []
    for path in sorted((root / PACKAGE).rglob("*.py")):
        if path == root / move.file:
            continue
        text = path.read_text(errors="replace")
        if move.name not in text:
            continue
        for node in ast.walk(ast.parse(text, str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.ImportFrom) else []
            taken = move.name in names and (node.module != move.origin or node.level)
            attribute = isinstance(node, ast.Attribute) and node.attr == move.name
            if taken or (attribute and ast.unparse(node.value) != move.origin):
                found.append(f"{path}:{node.lineno}")
    return found


def _offset(lines: list[str], lineno: int) -> int:
    return sum(len(line) for line in lines[: lineno - 1])


def moved(move: Move, text: str, reading: Reading) -> str:
    """The text with the module-top import gone and the marked import right before each due statement; edited from
    the end so that the earlier positions stay right."""
    lines = text.splitlines(keepends=True)
    top = reading.top
    edits = [(_offset(lines, top.lineno), _offset(lines, top.end_lineno + 1), "")]
    for statement in reading.due:
        at = _offset(lines, statement.lineno)
        indent = lines[statement.lineno - 1].encode()[: statement.col_offset].decode()
        edits.append((at, at, f"{indent}{move.line}  {MARKER}\n"))
    for start, end, insert in sorted(edits, reverse=True):
        text = text[:start] + insert + text[end:]
    return text


def plan(root: Path) -> Outcome:
    folder = root / PACKAGE
    if not folder.is_dir():
        return Outcome(ERROR, f"{folder} is not a folder: no SGLang source to patch")
    edits, done, upstream, due = {}, [], [], []
    try:
        for move in MOVES:
            path = root / move.file
            if not path.is_file():
                return Outcome(ERROR, f"no {path}: an SGLang this patch does not know, nothing changed")
            text = edits.get(path) or path.read_text()
            reading = read(move, text, str(path))
            if reading.top is None:
                (done if reading.ours else upstream).append(f"{move.name} in {path}")
                continue
            others = importers(root, move)
            if others:
                raise Refused(f"{', '.join(others)} takes {move.name} from {move.module}, which would lose it")
            edits[path] = moved(move, text, reading)
            due.append(f"{move.name} in {path} (used at line {', '.join(str(s.lineno) for s in reading.due)})")
    except Refused as exc:
        return Outcome(ERROR, f"{exc}: a shape this patch does not know, nothing changed")
    except OSError as exc:
        return Outcome(ERROR, f"cannot read SGLang's source under {folder}: {exc.strerror}")
    except SyntaxError as exc:
        return Outcome(ERROR, f"{exc.filename}:{exc.lineno}: does not parse: {exc.msg}")
    settled = "; ".join(
        part
        for part in (
            f"imported where used (this patch): {', '.join(done)}" if done else "",
            f"SGLang imports where used itself: {', '.join(upstream)}" if upstream else "",
        )
        if part
    )
    if due:
        message = f"import where used: {'; '.join(due)}"
        return Outcome(WOULD_APPLY, f"{message}; {settled}" if settled else message, edits)
    return Outcome(ALREADY_APPLIED if done else NOT_NEEDED, settled)
