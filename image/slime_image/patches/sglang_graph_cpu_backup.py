"""sglang-graph-cpu-backup (wall W52).

slime runs every rollout engine with SGLANG_MEMORY_SAVER_CUDA_GRAPH=true and, under --offload-rollout, the memory
saver on, so SGLang captures its CUDA graphs into a pool that torch_memory_saver pauses with the engine. SGLang up to
0.5.22 captures that pool without `enable_cpu_backup`, so a pause drops its contents and a resume maps fresh pages:
kernels that keep state in the pool between launches replay garbage (`CUDA error: misaligned address` a few RL steps
in, reported with trtllm_mla on GB300). SGLang 0.5.23 passes `enable_cpu_backup=True` at its capture site. The patch
adds that argument at every such site of the installed SGLang that lacks it (the site names the CUDA-graph tag), and
puts a marker comment above the statement. It retires itself where SGLang already passes it, and refuses a tree with
no capture site it recognises or with a backup argument that is not the constant True.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from slime_image.patches.base import ALREADY_APPLIED, ERROR, NOT_NEEDED, WOULD_APPLY, Outcome, char_offset

ID = "sglang-graph-cpu-backup"
WALLS = ("W52",)
TARGET = "sglang_root"
CHANGES = (
    "at each place SGLang captures a CUDA graph under the memory saver (`memory_saver_adapter.cuda_graph` with the "
    "`GPU_MEMORY_TYPE_CUDA_GRAPH` tag: 0.5.12.post1's `cuda_graph_runner.py`, 0.5.15.post1's "
    "`runner_backend/full_cuda_graph_backend.py`), `enable_cpu_backup=True` is passed, so a pause copies the graph "
    "pool to host memory and a resume puts it back instead of handing the graphs fresh pages"
)
RETIRES = "`not-needed` when SGLang already captures with `enable_cpu_backup=True` (0.5.23 and later)"
SOURCE = Path("sglang/srt")
# Ascend's graph backend takes its own allocator, which the image never runs (a CUDA image); left as it is.
NOT_CUDA = Path("sglang/srt/hardware_backend/npu")
CALLEE = re.compile(r"(^|[._])memory_saver_adapter\.cuda_graph$")
TAG = "GPU_MEMORY_TYPE_CUDA_GRAPH"
BACKUP = "enable_cpu_backup"
MARKER = "# slime-image W52: back the graph pool up across a pause (enable_cpu_backup)"


@dataclass(frozen=True)
class Site:
    path: Path
    line: int  # of the statement that holds the capture call
    backup: str | None  # the backup argument's source, None when absent
    tag: ast.keyword  # where the argument goes
    statement: ast.stmt


def _capture_call(node: ast.AST) -> ast.Call | None:
    """`X.memory_saver_adapter.cuda_graph(tag=...)`, or `partial(X.memory_saver_adapter.cuda_graph, tag=...)`."""
    if not isinstance(node, ast.Call):
        return None
    func = ast.unparse(node.func)
    if CALLEE.search(func) or (
        func in ("partial", "functools.partial") and node.args and CALLEE.search(ast.unparse(node.args[0]))
    ):
        return node
    return None


def sites(root: Path) -> list[Site]:
    """Every CUDA-graph capture under the memory saver in the SGLang installed in `root`, in file order."""
    found = []
    for path in sorted((root / SOURCE).rglob("*.py")):
        if (root / NOT_CUDA) in path.parents:
            continue
        text = path.read_text(errors="replace")
        if "memory_saver_adapter.cuda_graph" not in text:
            continue
        tree = ast.parse(text, str(path))
        statements = {
            id(child): node for node in ast.walk(tree) if isinstance(node, ast.stmt) for child in ast.walk(node)
        }
        for node in ast.walk(tree):
            call = _capture_call(node)
            tags = [k for k in call.keywords if k.arg == "tag" and ast.unparse(k.value) == TAG] if call else []
            if tags:
                backup = next((ast.unparse(k.value) for k in call.keywords if k.arg == BACKUP), None)
                statement = statements[id(call)]
                found.append(Site(path, statement.lineno, backup, tags[0], statement))
    return found


def _patched(text: str, due: list[Site]) -> str:
    """The file's text with the argument after each due site's tag and the marker above its statement; edited from
    the end so that the earlier positions stay right."""
    lines = text.splitlines(keepends=True)
    edits = []
    for site in due:
        edits.append((char_offset(lines, site.tag.end_lineno, site.tag.end_col_offset), f", {BACKUP}=True"))
        indent = " " * site.statement.col_offset
        edits.append((char_offset(lines, site.statement.lineno, 0), f"{indent}{MARKER}\n"))
    for at, insert in sorted(edits, reverse=True):
        text = text[:at] + insert + text[at:]
    return text


def _marked(site: Site, lines: list[str]) -> bool:
    return site.line >= 2 and lines[site.line - 2].strip() == MARKER


def plan(root: Path) -> Outcome:
    source = root / SOURCE
    if not source.is_dir():
        return Outcome(ERROR, f"{source} is not a folder: no SGLang source to patch")
    try:
        found = sites(root)
    except OSError as exc:
        return Outcome(ERROR, f"cannot read SGLang's source under {source}: {exc.strerror}")
    except SyntaxError as exc:
        return Outcome(ERROR, f"{exc.filename}:{exc.lineno}: does not parse: {exc.msg}")
    if not found:
        return Outcome(
            ERROR,
            f"no CUDA-graph capture under the memory saver (memory_saver_adapter.cuda_graph with tag={TAG}) under "
            f"{source}: an SGLang this patch does not know, nothing changed",
        )
    odd = [s for s in found if s.backup not in (None, "True")]
    if odd:
        where = ", ".join(f"{s.path}:{s.line} ({BACKUP}={s.backup})" for s in odd)
        return Outcome(ERROR, f"unrecognised backup argument at {where}: nothing changed")
    due = [s for s in found if s.backup is None]
    if not due:
        texts = {s.path: s.path.read_text().splitlines(keepends=True) for s in found}
        ours = [s for s in found if _marked(s, texts[s.path])]
        where = ", ".join(f"{s.path}:{s.line}" for s in found)
        if ours:
            return Outcome(ALREADY_APPLIED, f"the graph pool is backed up across a pause at {where}")
        return Outcome(NOT_NEEDED, f"SGLang already captures with {BACKUP}=True at {where}")
    edits = {}
    for path in dict.fromkeys(s.path for s in due):
        edits[path] = _patched(path.read_text(), [s for s in due if s.path == path])
    where = ", ".join(f"{s.path}:{s.line}" for s in due)
    return Outcome(WOULD_APPLY, f"capture the CUDA-graph pool with {BACKUP}=True at {where}", edits)
