"""A lock's `# built from source` lines name the tree and checkout the build takes (sweep 4 row 9): MEGATRON_COMMIT or
SLIME_REF edited in locks/<pairing>.lock was taken by make lint and make build DRY_RUN=1, the lock then saying
Megatron-LM was at another commit than the one the build uses. Each source line of every pairing's lock, its
checkout edited or the line deleted, and a line for a tree the build does not take, is run through every command that
judges a lock current (plan_steps.stale_lock, the one comparison): each refuses, naming the line's value and the
build's."""

from __future__ import annotations

import pytest
from slime_image.lock_file import read_lock
from test_lock_readers import READS, git, repo, run_all  # noqa: F401 (repo, and tree under it: fixtures)
from test_pairing_files import tree  # noqa: F401

from tools.inputs import pairings
from tools.inputs.lock import SOURCE_LINE, lock_sources
from tools.inputs.recipe import Recipe
from tools.planner.plan_steps import built_from_source

NAMES = [n for n in pairings.names() if not pairings.load(n).draft]
# The commands of test_lock_readers.READS that judge a lock current before they go on (the rest read it for its pins).
JUDGE = {"rules", "make build", "build-check", "promote", "fingerprint", "render"}
ADDED = "other = /opt/other at OTHER_REF=v1"


def _sources() -> list[str]:
    """The distributions the default pairing's lock names as built from source (each pairing's lock names the same)."""
    return list(lock_sources(read_lock(pairings.default().lock)))


def cases(root) -> dict[str, tuple[dict[str, str], list[str], list[str]]]:
    """Case -> (each pairing's lock path -> its edited text, the words the refusal must hold, and one of which it must
    hold: the build's tree and checkout of one pairing). Whichever pairing a command reads, it reads an edited lock."""
    locks = {n: root / "locks" / f"{n}.lock" for n in NAMES}
    found = {}
    for dist in _sources():
        edited, deleted, built = {}, {}, []
        for name, path in locks.items():
            text = path.read_text()
            line = f"{SOURCE_LINE}{dist} = {lock_sources(read_lock(path))[dist]}"
            edited[str(path)] = text.replace(line, f"{line.rpartition('=')[0]}=edited", 1)
            deleted[str(path)] = text.replace(line + "\n", "", 1)
            built.append(built_from_source(Recipe.load(build_args=pairings.load(name).build_arg_values))[dist])
        found[f"{dist}'s checkout edited"] = (edited, ["=edited'", f"is not what the build takes: {dist} from "], built)
        found[f"{dist}'s line deleted"] = (deleted, [f"has no '{SOURCE_LINE}{dist} = ...' line"], built)
    added = {}
    for path in locks.values():
        text = path.read_text()
        at = text.index(SOURCE_LINE)
        added[str(path)] = text[:at] + f"{SOURCE_LINE}{ADDED}\n" + text[at:]
    found["a line of a tree the build does not take"] = (
        added,
        [f"'{SOURCE_LINE}{ADDED}' names no tree the build"],
        [""],
    )
    return found


def test_every_source_line_of_the_committed_locks_is_what_the_build_takes():
    assert set(_sources()) >= {"megatron-core", "slime"}
    for name in NAMES:
        pairing = pairings.load(name)
        built = built_from_source(Recipe.load(build_args=pairing.build_arg_values))
        assert lock_sources(read_lock(pairing.lock)) == built


@pytest.mark.parametrize("module, prog, argv", [(m, p, a) for m, runs in READS.items() for p, a in runs if p in JUDGE])
def test_every_command_that_judges_a_lock_current_refuses_a_source_line_the_build_does_not_take(
    repo,  # noqa: F811
    tmp_path,
    module,
    prog,
    argv,
):
    found = cases(repo)
    results = run_all(repo, module, argv, [{"files": files} for files, _, _ in found.values()], tmp_path)
    wrong = []
    for (case, (_, words, one_of)), result in zip(found.items(), results, strict=True):
        said = result["stderr"].strip().splitlines()
        cause = next((line for line in said if " is stale for pairing " in line), "")
        ok = (
            result["code"] not in (0, 99)
            and all(word in cause for word in words)
            and any(word in cause for word in one_of)
            and said[-1].startswith("fix: ")
            and "make lock PAIRING=" in said[-1]
            and "Traceback" not in result["stderr"]
        )
        if not ok:
            wrong.append(f"{case}: exit {result['code']}, {result['stderr'][-600:]!r}")
    assert wrong == []
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
