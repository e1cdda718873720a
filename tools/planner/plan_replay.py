"""Each pip step of a recipe replayed over a simulated environment (plan_env.py): the base manifest first, then every
step in Dockerfile order, each resolved by the planner's pip (`install --dry-run --report`) through the planner's
index (plan_index.py) and cached by its inputs; per step, what it added, changed and removed, and what `pip check`
says right after it (run while the next step resolves)."""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import json
import os
import platform
import tempfile
import time
import urllib.error
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name
from slime_image import fetch
from slime_image.atomic_write import write_atomically
from slime_image.errors import UserError
from slime_image.lock_file import Lock

from tools import tree_reads
from tools.inputs.input_names import shown
from tools.inputs.lock import existing_locks, lock_cutoff, recipe_locks
from tools.inputs.recipe import ROOT, Recipe
from tools.inputs.recipe_steps import PipStep, Unsimulated
from tools.planner import index_http, plan_env, plan_steps, sdist_metadata
from tools.planner.base_manifest import manifest_for
from tools.planner.plan_env import (
    Dist,
    EnvSetupError,
    FakeEnv,
    cached_json,
    dist_from_report,
    index_url,
    load_manifest,
    planner_pip,
    unreachable,
)
from tools.planner.plan_findings import BLIND, TORCH_EXTENSIONS, Findings
from tools.planner.plan_index import NO_PAGE_FIX, PlanIndex
from tools.planner.plan_report import StepResult, describe, shorten
from tools.planner.plan_steps import exact_pin, invalid_requirement, requirement_files
from tools.planner.progress import ticking
from tools.planner.wheel_tags import wheel_tags

CHECKS_AT_ONCE = 2  # pip checks left running while later steps resolve; each step is reported once its check is in
# What pip prints when a step cannot be satisfied, so the real build would stop there.
UNSATISFIABLE = (
    "No matching distribution found",
    "ResolutionImpossible",
    "conflicting dependencies",
    "Invalid requirement",
)
NETWORK_ERRORS = (
    "NewConnectionError",
    "Max retries exceeded",
    "Temporary failure in name resolution",
    "Network is unreachable",
    "ConnectionError",
    "ProxyError",
)


def cache_folder() -> Path:
    """The plan's cache: PLAN_CACHE, else .cache/plan. A blank PLAN_CACHE (`make plan PLAN_CACHE=`) is refused: as a
    path it is the current folder, where the plan would leave its hundreds of cache files; so is a relative one, which
    names a folder of wherever the planner runs (make runs it in the repository) and, written into the venv's .pth
    line, a folder pip would look for beside site-packages."""
    value = os.environ.get("PLAN_CACHE")
    if value is None:
        return ROOT / ".cache" / "plan"
    if not value.strip():
        raise UserError(
            "PLAN_CACHE is empty: the plan's cache would be the current folder",
            "unset PLAN_CACHE for .cache/plan, or set it to a folder: PLAN_CACHE=/tmp/plan-cache",
            code=2,
        )
    if not os.path.isabs(value):
        raise UserError(
            f"PLAN_CACHE={value} is a relative path: the plan's cache would be wherever the planner runs",
            f"give it as an absolute path: PLAN_CACHE={Path(value).absolute()}",
            code=2,
        )
    return Path(value)


@contextlib.contextmanager
def disk_named():
    """A full disk under what the block writes (the plan's cache, a lock) is said as such, not as a failed write."""
    try:
        yield
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise full_disk(cache_folder(), exc.filename) from None
        raise


# How a child process or a thread of the planner says that a disk is full, where no OSError reaches the planner.
FULL_DISK = ("No space left on device", "Disk quota exceeded")


def full_disk(cache: Path, path: str | None = None) -> UserError:
    """A full disk, named: the cache's (the path written under it, or unknown), or that of the file written."""
    if path is None or Path(path).is_relative_to(cache):
        return UserError(
            f"no space left on the disk of the plan's cache {cache}",
            "free space there, or set PLAN_CACHE to a folder on a disk with room (a plan of slime.Dockerfile keeps "
            "about 30 MB)",
            code=2,
        )
    return UserError(f"no space left on the disk of {path}", "free space there (TMPDIR moves temporary files)", code=2)


def platform_args(arch: str) -> list[str]:
    if arch == platform.machine():
        return []  # this host is the image's architecture: pip's own tags (glibc 2.34+ needed by sglang)
    tags = [f"manylinux_2_{n}_{arch}" for n in range(39, 16, -1)] + [f"manylinux2014_{arch}"]
    args = ["--only-binary=:all:", "--python-version", "3.12", "--implementation", "cp", "--abi", "cp312"]
    return args + [a for tag in tags for a in ("--platform", tag)]


def index_settings() -> str:
    """What the plan's resolutions depend on of pip's settings, as one string for cache keys."""
    return json.dumps(sorted(plan_env.pip_settings().items()))


def index_reachable() -> bool:
    url = index_url().rstrip("/") + "/pip/"
    try:
        with fetch.open_url(url, timeout=index_http.TIMEOUT):
            return True
    except urllib.error.HTTPError:
        return True  # the server answered
    except (urllib.error.URLError, OSError, ValueError):
        return False


class _StepFails(Exception):
    def __init__(self, line: int, why: str):
        super().__init__(why)
        self.line, self.why = line, why


class _Unsimulable(Exception):
    """pip could not work out the step here (for example an sdist whose metadata needs CUDA to build)."""


class _WouldFail(Exception):
    """pip says the step cannot be satisfied: the Docker build would fail at this step."""


@dataclass
class Replayed:
    """What replaying every step gave: the base manifest's fields, each step's result, the lines of the steps that
    fail the build, the lines after requirements.txt's step that moved numpy, and the findings so far."""

    manifest: dict
    results: list[StepResult]
    failed_steps: list[int]
    numpy_moved: list[int]
    findings: Findings


class Replay:
    """The simulated environment of one plan and what each step did to it; the Planner (plan_check.py) judges it."""

    def __init__(
        self,
        recipe: Recipe,
        *,
        manifest: Path | None = None,
        arch: str,
        log=print,
        use_lock: bool = True,
        cutoff: str = "",
        assume_empty_base: bool = False,
        lock_file: Lock | None = None,
        allow_blind: bool = False,
    ):
        self.recipe = recipe
        self.args = recipe.args
        self.arch = arch
        self.log = log
        self.manifest_path = manifest or self.base_manifest(assume_empty_base)
        self.cache = cache_folder()
        self.env = FakeEnv(self.cache / f"env-py312-{arch}")
        self.setter: dict[str, int] = {}  # distribution -> the line of the step that last installed it
        self.urls: dict[str, str] = {}  # distribution -> the file its last install took, where pip resolved it
        self.from_source: dict[str, str] = {}  # distribution -> the tree and checkout the image builds it from
        # Every lock the plan reads, read once, here, and held to the one form before anything is planned: the recipe's
        # (its stack locks, then its lock), or the one given to plan under (make lock's second plan), which constrains
        # every step: its stack locks, which it decides, would pin the same versions of what their steps install.
        self.locks: dict[Path, Lock] = {}
        if use_lock:
            self.locks = {lock_file.path: lock_file} if lock_file else recipe_locks(recipe)
        self.lock: Lock | None = (lock_file or self.locks.get(recipe.constraint_file())) if use_lock else None
        self.lock_override = lock_file
        self.blind = plan_steps.Blind(recipe)
        self.allow_blind = allow_blind
        self.after_line: dict[int, dict[str, str]] = {}  # a step's line -> the environment after it
        # A step's line -> what its installs put in, whatever a later command removed: pip installs those too, under
        # the lock (a distribution installed, then uninstalled in the same RUN, needs its pin and hashes all the same).
        self.installed_at: dict[int, dict[str, str]] = {}
        # What the verification build found the image's sdist-built distributions to declare (sdist_metadata.py)
        self.recorded_metadata = sdist_metadata.metadata_wheels(self.cache)
        # Resolve as the index stood when the lock was made, so that re-planning the same inputs gives the same set.
        self.cutoff = cutoff or (lock_cutoff(self.lock) if self.lock else "")
        self._index: PlanIndex | None = None  # the planner's index in front of the real one, once a step needs it
        self._open = contextlib.ExitStack()  # what replay() closes: the planner's index
        self._pins: dict[str, str] = {}
        # (name, version) -> the sha256s the index lists for that version's files, for each page the plan read
        self.listed: dict[tuple[str, str], set[str]] = {}
        # Planning afresh (make lock's first plan): the lock it will replace names what is likely to come back.
        replaced = existing_locks([recipe.constraint_file()]) if not use_lock and recipe.constraint_file() else {}
        self._hints = next(iter(replaced.values())).versions() if replaced else {}

    @functools.cached_property
    def upstream(self) -> str:
        return index_url()

    @property
    def index(self) -> PlanIndex:
        """Started on first need, so that a plan whose every step is cached asks nothing of the network."""
        if self._index is None:
            checked: dict[str, set[str]] = {}
            for lock in self.locks.values():
                for name, version in lock.versions().items():
                    checked.setdefault(name, set()).add(version)
            self._index = self._open.enter_context(
                PlanIndex(self.upstream, self.cache / "metadata", self.arch, self._pins, self._hints, checked)
            )
            self.listed = self._index.listed
            self._index.prefetch(self._pins or self._hints)
        return self._index

    def base_manifest(self, assume_empty: bool) -> Path | None:
        """base-manifests/<image>.json for the image the built stages start from; None to plan from nothing."""
        image = self.recipe.base_image
        found = manifest_for(image)
        if found.is_file() or not assume_empty:
            if not found.is_file():
                raise UserError(
                    f"no base-image manifest for {image}: the plan needs {shown(found)}",
                    f"make base-manifest BASE_IMAGE={image} (where Docker runs), or pass --base-manifest FILE; "
                    "--assume-empty-base plans from an empty environment instead",
                    code=2,
                )
            return found
        return None

    def read_manifest(self) -> tuple[dict, list]:
        """The base manifest, read before the plan waits for its environment: a bad one is refused at once."""
        if self.manifest_path is None:
            return {"image": self.recipe.base_image, "environment": "ASSUMED EMPTY", "partial": True}, []
        return load_manifest(self.manifest_path)

    def start(self, data: dict, dists: list) -> dict:
        try:
            with ticking("preparing the planner's Python 3.12 venv"):
                self.env.create()
        except EnvSetupError as exc:
            if any(marker in str(exc) for marker in FULL_DISK):
                raise full_disk(self.cache) from None
            if not index_reachable():
                raise unreachable("while preparing the planner's Python 3.12 venv") from None
            raise UserError(str(exc), "check that pip can install packages from your index", code=2) from None
        for dist in dists:
            self.env.add(dist)
        self.base = self.env.installed()
        return data

    def _cache_key(self, pip_args: list[str], files: list[Path], lock: Lock | None, index: str) -> str:
        """What a resolution depends on: each file pip reads by its absolute path and its text (`make plan` names the
        recipe's files relative to the repository, a plan run from elsewhere by their whole path: the same files); of
        the lock, its versions alone, which pip reads from a copy, never from the lock's path (a re-hashed lock, or
        the same lock in another folder, resolves as it did)."""
        state = sorted(self.env.installed().items())
        texts = [
            lock.versions_text() if lock is not None and f == lock.path else tree_reads.read_text(f) for f in files
        ]
        named = {str(f): "the lock" if lock is not None and f == lock.path else str(f.absolute()) for f in files}
        pip_args = [named.get(arg, arg) for arg in pip_args]
        inputs = [state, pip_args, texts, self.arch, planner_pip(), index, sorted(self._pins.items())]  # what pip sees
        return hashlib.sha256(json.dumps(inputs).encode()).hexdigest()[:20]

    def _resolve(self, step: PipStep, targets: list[str], files: list[Path]) -> tuple[list[dict], str]:
        pip_args = ["install", "--dry-run", "--quiet", "--use-feature=fast-deps", *platform_args(self.arch)]
        if self.cutoff:
            pip_args += ["--uploaded-prior-to", self.cutoff]
        pip_args += step.resolve
        if self.recorded_metadata is not None:
            pip_args += ["--find-links", str(self.recorded_metadata)]
        requirements = requirement_files(self.recipe, step)
        for path in files:
            pip_args += ["-r" if path in requirements else "-c", str(path)]
        pip_args += targets
        # A step that names its own index reads it directly; the others read the real index through the planner's.
        own_index = any(w.startswith(("--index-url=", "--no-index")) for w in step.resolve)
        lock = self.step_lock(step)
        key = self._cache_key(pip_args, files, lock, "" if own_index else index_settings())
        cached = self.cache / "resolutions" / f"{key}.json"
        kept = cached_json(cached)
        if isinstance(kept, dict) and isinstance(kept.get("install"), list):
            return kept["install"], "cached resolution"
        through = [] if own_index else ["--index-url", self.index.url]
        with tempfile.TemporaryDirectory() as tmp:
            report = Path(tmp) / "report.json"
            if lock is not None:
                # The lock's hashes put pip in hash-checking mode, where it downloads every file to hash it; the plan
                # reads only their metadata, so its pip gets the lock's versions alone.
                versions = Path(tmp) / "lock-versions.txt"
                versions.write_text(lock.versions_text())
                pip_args = [str(versions) if a == str(lock.path) else a for a in pip_args]
            proc = self.env.pip(*pip_args[:2], "--report", str(report), *through, *pip_args[2:])
            if proc.returncode != 0:
                tail = [line for line in proc.stderr.strip().splitlines() if not line.startswith("WARNING")]
                text = "\n".join(tail[-3:])
                if any(marker in error for marker in FULL_DISK for error in [proc.stderr, *self._index_errors()]):
                    raise full_disk(self.cache)
                if self._index and (refusal := self._index.refusal()):
                    raise UserError(
                        f"the package index {index_url()} {refusal[0]} while simulating line {step.line}",
                        refusal[1],
                        code=2,
                    )
                if self._index and self._index.refused:
                    raise UserError(
                        f"the package index {index_url()} gave no PEP 691 JSON page at {self._index.refused[0]} "
                        f"while simulating line {step.line}",
                        NO_PAGE_FIX,
                        code=2,
                    )
                network = any(marker in proc.stderr for marker in NETWORK_ERRORS)
                if network or (self._index and self._index.errors) or not index_reachable():
                    raise unreachable(f"while simulating line {step.line}")
                if any(marker in proc.stderr for marker in UNSATISFIABLE):
                    raise _WouldFail(text)
                raise _Unsimulable(text or f"pip exited {proc.returncode}")
            data = json.loads(report.read_text())
        for item in data["install"]:
            if through and "url" in item.get("download_info", {}):
                item["download_info"]["url"] = self.index.real_url(item["download_info"]["url"])
        write_atomically(cached, json.dumps({"install": data["install"]}))
        return data["install"], "resolved"

    def install_dist(self, dist: Dist, line: int, url: str = "") -> None:
        """Put a distribution into the simulated environment and remember which step's line installed it, and from
        which file where pip resolved it."""
        self.env.add(dist)
        self.setter[canonicalize_name(dist.name)] = line
        self.urls[canonicalize_name(dist.name)] = url
        self.installed_at.setdefault(line, {})[canonicalize_name(dist.name)] = dist.version

    def install(self, step: PipStep) -> tuple[list[str], str]:
        """(what of the step the plan cannot see, empty when it simulated it all; its note)"""
        rejected = [why for why in map(invalid_requirement, step.packages) if why]
        if rejected:
            raise _StepFails(step.line, "; ".join(rejected))
        asked = plan_steps.asked(self.recipe, step, self.arch)
        notes, targets, unseen = asked.notes, asked.targets, asked.unseen
        for dist, built_at in asked.named:
            self.install_dist(dist, step.line)
            if built_at is not None:
                self.from_source[dist.name] = built_at
        if not targets and not step.requirements:
            return unseen, "; ".join(notes)
        files = requirement_files(self.recipe, step)
        files += [self.recipe.context_file(c, step.line) for c in step.constraints]
        lock = self.step_lock(step)
        if lock is not None:
            files.append(lock.path)
        try:
            items, how = self._resolve(step, targets, files)
        except _WouldFail as exc:
            raise _StepFails(step.line, str(exc)) from None
        except _Unsimulable as exc:
            pinned = [(t, pin) for t in targets if (pin := exact_pin(t))]
            for _, (name, version) in pinned:
                self.install_dist(Dist(name, version), step.line)
            names = ", ".join(t for t, _ in pinned)
            assumed = f"assumed {names} installed with no other change" if pinned else "assumed no change"
            why = f"pip cannot work the step out here ({exc})"
            return [*unseen, why], "; ".join([*notes, f"cannot simulate: {exc}", assumed])
        urls = [item.get("download_info", {}).get("url", "") for item in items]
        tags = wheel_tags(urls, self.cache / "wheel-tags", known=self._index.tags if self._index else None)
        for item, url in zip(items, urls, strict=True):
            self.install_dist(dist_from_report(item, tags), step.line, url)
        recorded = self.recorded_metadata and [u.rsplit("/", 1)[-1] for u in urls if str(self.recorded_metadata) in u]
        if recorded:
            notes.append(f"from sdist, with the metadata the verification build recorded: {', '.join(recorded)}")
        return unseen, "; ".join([*notes, how])

    def step_lock(self, step: PipStep) -> Lock | None:
        """The lock this step installs under: the file PIP_CONSTRAINT names at its line, unless the RUN gives the
        command a PIP_CONSTRAINT of its own (read as its -c, or none when empty)."""
        if self.lock is None or step.constrained_here:
            return None
        return self.lock_override or self.locks.get(self.recipe.constraint_at(step.line))

    @property
    def requirements_line(self) -> int | None:
        return self.recipe.requirements_step.line if self.recipe.requirements_step else None

    def _one(self, step: PipStep | Unsimulated, blind: list[str]) -> tuple[list[str], str, bool]:
        """(what of the step the plan could not see, empty when it simulated it; its note; whether it fails the
        build) for one step, the environment changed as it changes it."""
        if isinstance(step, Unsimulated):
            return blind, f"not simulated: {step.reason}; assumed no change", False
        if blind:
            return blind, "not simulated: the plan cannot see what it installs (blind); assumed no change", False
        if step.error:
            return [], f"THIS STEP FAILS THE BUILD: {step.error}", True
        if step.installs_nothing:
            return [], f"pip installs nothing with {', '.join(step.installs_nothing)}", False
        if step.unsupported:
            why = (
                f"the planner cannot honour {'; '.join(step.unsupported)}: pip would install elsewhere, or otherwise "
                "than the plan follows; drop it from the step"
            )
            return [why], f"not simulated: {why}; assumed no change", False
        if step.action == "uninstall":
            gone = [p for p in step.packages if self.env.remove(p)]
            return [], f"removed {len(gone)} of {len(step.packages)} named", False
        try:
            with ticking(f"line {step.line}: resolving {shorten(' '.join(step.packages), 60)}"):
                return (*self.install(step), False)
        except _StepFails as exc:
            return [], f"THIS STEP FAILS THE BUILD: {exc.why}", True

    def _replay(self) -> tuple[list[StepResult], list[int], list[int], Findings]:
        work = sorted(
            [(s.line, i, s) for i, s in enumerate(self.recipe.steps)]
            + [(u.line, -1, u) for u in self.recipe.unsimulated],
            key=lambda item: (item[0], item[1]),
        )
        results = []
        requirements_line = self.requirements_line
        numpy_after_requirements = []
        failed_steps: list[int] = []
        findings = Findings(self.base.get("torch"), {n for n in self.base if n in TORCH_EXTENSIONS})
        checking = []  # steps, their headers and their pip checks, which run while the next steps resolve

        def report(result: StepResult, header: str, broken) -> None:
            result.broken = broken()
            self.log(f"{header}\n{describe(result)}", flush=True)

        for index, (_line, _, step) in enumerate(work, 1):
            before = self.env.installed()
            start = time.monotonic()
            unseen, note, fails = self._one(step, self.blind.why(step))
            if fails:
                failed_steps.append(step.line)
            after = self.env.installed()
            self.after_line[step.line] = after
            result = StepResult(step.line, step.command, time.monotonic() - start, not unseen, note)
            result.added = {n: v for n, v in sorted(after.items()) if n not in before}
            result.changed = {n: [before[n], v] for n, v in sorted(after.items()) if n in before and before[n] != v}
            result.removed = sorted(n for n in before if n not in after)
            result.findings = findings.after_step(result, after)
            # The one place a step's verdict on sight is made: what the plan did not simulate, for whatever reason, is
            # blind, and fails the plan unless --allow-blind.
            blind = [f"{BLIND}: line {step.line}: {why}" for why in unseen]
            if self.allow_blind:
                result.warnings = blind
            else:
                result.findings += blind
            if requirements_line is not None and step.line > requirements_line and "numpy" in result.changed:
                numpy_after_requirements.append(step.line)
            results.append(result)
            header = f"[{index}/{len(work)}] line {step.line}: {shorten(step.command)}"
            checking.append((result, header, self.env.check_later()))
            while len(checking) > CHECKS_AT_ONCE:
                report(*checking.pop(0))
        for pending in checking:
            report(*pending)
        return results, failed_steps, numpy_after_requirements, findings

    def replay(self) -> Replayed:
        """Each step in Dockerfile order over the simulated environment, holding that environment's lock."""
        pins = self.lock.versions() if self.lock else {}
        # The index shows pip the locked versions alone only when every step that asks it resolves under the lock: a
        # step that sets the lock aside for an index name (PIP_CONSTRAINT= before it) must see the rest; the lock's
        # pins are then only fetched ahead.
        aside = [
            s for s in self.recipe.installs if s.constrained_here and any(not p.startswith("/") for p in s.packages)
        ]
        self._pins, self._hints = ({}, {**self._hints, **pins}) if aside else (pins, self._hints)
        data, dists = self.read_manifest()
        with self._open:
            self._open.enter_context(plan_env.exclusive(self.env.folder.with_suffix(".lock"), self.log))
            self._open.enter_context(self.env.running())  # every pip of the plan: stopped and cleaned after at its end
            if not self.env.ready():
                self.index  # noqa: B018 -- starts fetching the lock's pages while the planner's venv is made
            manifest = self.start(data, dists)
            replayed = Replayed(manifest, *self._replay())
        self._index = None
        return replayed

    def _index_errors(self) -> list[str]:
        return self._index.errors if self._index else []


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
