"""Where each wall is guarded: every guard of the project with the walls it names, from the registries that declare
them (the smoke checks, the Dockerfile rules, the manifest policies, the patches, the plan's findings, the
renderer's and the submitter's refusals). The walls themselves are image/slime_image/walls.py.

    python -m tools.wall_guards            every wall and its guards
    python -m tools.wall_guards W13 W22    those walls only
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from slime_image import p2p
from slime_image.canary import invariants
from slime_image.errors import UserError, run_command
from slime_image.options import Parser
from slime_image.patches import PATCHES
from slime_image.patches.upstream import UPSTREAM
from slime_image.smoke.registry import CHECKS
from slime_image.walls import BY_ID, WALLS

from tools.inputs import rules
from tools.k8s import grpo_submit, k8s_nodes, k8s_render, k8s_validate
from tools.planner import plan_findings

# Each kind of guard, by the short name a test's `guard_fails("rule:layer-order")` marker uses.
KINDS = {
    "check": "smoke check",
    "rule": "Dockerfile rule",
    "policy": "manifest policy",
    "patch": "patch",
    "finding": "plan finding",
    "render": "render refusal",
    "submit": "submit refusal",
    "deploy": "deploy refusal",
    "preflight": "two-node preflight",
    "canary": "canary invariant",
}


@dataclass(frozen=True)
class Guard:
    kind: str  # a key of KINDS: where it runs
    id: str
    walls: tuple[str, ...]

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.id}"

    def __str__(self) -> str:
        return f"{KINDS[self.kind]} {self.id}"


def guards() -> list[Guard]:
    found = [Guard("check", c.id, c.walls) for c in CHECKS]
    found += [Guard("rule", name, rule.walls) for name, rule in rules.RULES.items()]
    found += [Guard("policy", name, policy.walls) for name, policy in k8s_validate.POLICIES.items()]
    found += [Guard("patch", patch.ID, patch.WALLS) for patch in (*UPSTREAM, *PATCHES)]
    found += [Guard("finding", name, walls) for name, walls in plan_findings.GUARDS.items()]
    found += [Guard("render", name, walls) for name, walls in k8s_render.GUARDS.items()]
    found += [Guard("submit", name, walls) for name, walls in grpo_submit.GUARDS.items()]
    found += [Guard("deploy", name, walls) for name, walls in k8s_nodes.GUARDS.items()]
    found += [Guard("preflight", name, walls) for name, walls in p2p.GUARDS.items()]
    found += [Guard("canary", name, walls) for name, walls in invariants.GUARDS.items()]
    return found


def by_wall(found: list[Guard] | None = None) -> dict[str, list[Guard]]:
    index: dict[str, list[Guard]] = {wall.id: [] for wall in WALLS}
    for guard in guards() if found is None else found:
        for wall in guard.walls:
            index.setdefault(wall, []).append(guard)
    return index


def problems(found: list[Guard] | None = None, shown: dict[str, list[str]] | None = None) -> list[str]:
    """A guard naming a wall that does not exist, and a wall no guard names. Given `shown` (guard key -> the tests
    marked as showing it fail), also a test naming a guard that does not exist, and a wall no test shows guarded."""
    found = guards() if found is None else found
    unknown = [f"{g} names {w}, which is no wall" for g in found for w in g.walls if w not in BY_ID]
    unguarded = [f"{wall} has no guard" for wall, named in by_wall(found).items() if wall in BY_ID and not named]
    if shown is None:
        return unknown + unguarded
    keys = {g.key for g in found}
    unknown += [f"{tests[0]} shows {key} failing, which is no guard" for key, tests in shown.items() if key not in keys]
    untested = [
        f"{wall} has no test showing a guard failing on it (mark one with guard_fails)"
        for wall, named in by_wall(found).items()
        if wall in BY_ID and named and not any(g.key in shown for g in named)
    ]
    return unknown + unguarded + untested


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _walls(walls: tuple[str, ...]) -> str:
    return ", ".join(walls) or "-"


def walls_table() -> list[str]:
    rows = ["| wall | what you see | root cause | made impossible by | guarded by |", "|---|---|---|---|---|"]
    index = by_wall()
    for wall in WALLS:
        named = "; ".join(f"{KINDS[g.kind]} `{g.id}`" for g in index[wall.id])
        rows.append(f"| {wall.id} | {wall.sees} | {wall.cause} | {wall.design} | {named} |")
    return rows


def checks_table() -> list[str]:
    """The smoke checks in report order; what each proves is its function's docstring."""
    rows = ["| check | wall | stage | what it proves |", "|---|---|---|---|"]
    rows += [f"| `{c.id}` | {_walls(c.walls)} | {c.stage} | {_one_line(c.run.__doc__ or '')} |" for c in CHECKS]
    return rows


def patches_table() -> list[str]:
    """slime's own patches (applied first), then the image's: what each changes and how it retires itself."""
    rows = ["| patch | wall | what it changes | how it retires itself |", "|---|---|---|---|"]
    rows += [f"| `{p.ID}` | {_walls(p.WALLS)} | {p.CHANGES} | {p.RETIRES} |" for p in (*UPSTREAM, *PATCHES)]
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="tools.wall_guards", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("walls", nargs="*", help="wall ids (default: all)")

    def run() -> int:
        args = parser.parse_args(argv)
        unknown = [w for w in args.walls if w not in BY_ID]
        if unknown:
            raise UserError(f"no wall {', '.join(unknown)}", f"use one of W1 to {WALLS[-1].id}")
        index = by_wall()
        for wall in WALLS:
            if args.walls and wall.id not in args.walls:
                continue
            print(f"{wall.id}  {wall.sees}")
            for guard in index[wall.id] or ["(no guard)"]:
                print(f"      {guard}")
        found = problems()
        for line in found:
            print(f"wall_guards: {line}", file=sys.stderr)
        return 1 if found else 0

    return run_command("wall_guards", run, code=2)


if __name__ == "__main__":
    sys.exit(main())
