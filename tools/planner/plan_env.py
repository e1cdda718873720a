"""A simulated Python environment for the layer planner: a Python 3.12 venv whose site-packages holds
`*.dist-info` folders with real metadata (Name, Version, Requires-Dist) and no code.

pip treats those folders as installed distributions, so `pip install --dry-run --report` in that venv
resolves a layer exactly as it would over the image's environment, and `pip check` reports what a layer
left broken.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version
from slime_image import json_input, pip_conflicts
from slime_image.atomic_write import write_atomically
from slime_image.children import Children
from slime_image.errors import UserError
from slime_image.options import DAY, Number

from tools import tree_reads
from tools.inputs import url_form
from tools.inputs.recipe import ROOT
from tools.planner import index_http


@dataclass
class Dist:
    name: str
    version: str
    requires: list[str] = field(default_factory=list)
    requires_python: str | None = None
    extras: list[str] = field(default_factory=list)
    wheel_tags: list[str] = field(default_factory=list)  # what its .dist-info/WHEEL says (tools/planner/wheel_tags.py)

    def metadata(self) -> str:
        lines = ["Metadata-Version: 2.1", f"Name: {self.name}", f"Version: {self.version}"]
        if self.requires_python:
            lines.append(f"Requires-Python: {self.requires_python}")
        lines += [f"Provides-Extra: {e}" for e in self.extras]
        lines += [f"Requires-Dist: {r}" for r in self.requires]
        return "\n".join(lines) + "\n"


@functools.cache
def python312() -> str:
    """The image's Python: $PLAN_PYTHON (refused unless it is a Python 3.12), pyenv's 3.12.x, or python3.12 on PATH."""
    explicit = os.environ.get("PLAN_PYTHON")
    if explicit:
        found = interpreter(explicit)
        if not found.startswith("3.12."):
            raise UserError(
                f"PLAN_PYTHON={explicit} is {found or 'not a Python that runs'}, and the image's Python is 3.12",
                "set PLAN_PYTHON to a Python 3.12 (or unset it to use pyenv's or python3.12 on PATH)",
                code=2,
            )
        return explicit
    try:
        root = subprocess.run(["pyenv", "root"], capture_output=True, text=True, check=True).stdout.strip()
        found = sorted((Path(root) / "versions").glob("3.12.*/bin/python3"))
        if found:
            return str(found[-1])
    except (OSError, subprocess.CalledProcessError):
        pass
    on_path = shutil.which("python3.12")
    if on_path:
        return on_path
    raise UserError("no Python 3.12 found (the image's Python)", "install Python 3.12 or set PLAN_PYTHON", code=2)


@functools.cache
def interpreter(python: str) -> str:
    """A Python's version and real path ("3.12.1 /root/.pyenv/versions/3.12.1/bin/python3.12"), or "" when it
    does not run."""
    script = "import os, sys; print('%d.%d.%d' % sys.version_info[:3], os.path.realpath(sys.executable))"
    try:
        proc = subprocess.run([python, "-c", script], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout.strip() if proc.returncode == 0 else ""


@contextlib.contextmanager
def exclusive(lock: Path, log=print):
    """Hold `lock` while a plan uses what it guards (the simulated environment, which a plan empties and fills step
    by step): a second plan waits for the first instead of sharing it. The kernel drops the lock of a process that
    ends, however it ends."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"plan: waiting for another plan using {lock.with_suffix('')}")
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def planner_pip() -> str:
    """The pip the planner resolves with, pinned in pyproject.toml ([tool.slime-image] planner-pip)."""
    import tomllib

    return tomllib.loads(tree_reads.read_text(ROOT / "pyproject.toml"))["tool"]["slime-image"]["planner-pip"]


class EnvSetupError(Exception):
    """The planner's own venv could not be made (no Python 3.12, or its pip could not be installed)."""


PARTIAL = ".partial"  # what the planner's cache makes beside a thing before renaming it in; what a plan finds so, it
# removes (under the environment's lock: no other plan is making it)


def cached_json(path: Path) -> object:
    """A cache entry's JSON, or None when there is none or it does not parse (this planner writes each whole, so only
    other hands leave one so): it is made again."""
    try:
        return json_input.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _discard(path: Path) -> None:
    """Remove a folder or a file (what a half-made cache entry may be)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def pip_folder(cache: Path) -> Path:
    return cache / f"pip-{planner_pip()}"


class PlanChildren(Children):
    """Every child process of a plan (each pip, the venv it is made with, the unpacking of its pip), started in one
    place: slime_image.children.Children, so that each still running when the plan ends, however it ends (Ctrl-C,
    SIGTERM, an error), is stopped; and each with TMPDIR the plan's own temporary folder, removed when the plan ends, so
    that what a pip stopped midway leaves (pip-unpack-*, pip-ephem-wheel-cache-*, ...: up to 249 folders in /tmp after
    a cold plan stopped at ten seconds) goes with it, even from one killed outright (SIGKILL), which removes nothing
    itself. `where`: the folder it is made in (None: the system's temporary folder)."""

    def __init__(self, where: Path | None = None, name: str = "plan"):
        super().__init__()
        self.where, self.name = where, name
        self.folder: Path | None = None

    def __enter__(self) -> PlanChildren:
        if self.where is not None:
            self.where.mkdir(parents=True, exist_ok=True)
        self.folder = Path(tempfile.mkdtemp(prefix=f"{self.name}.tmp-", suffix=PARTIAL, dir=self.where))
        # The plan's own temporary files too (a resolution's report, the lock's versions): a TemporaryDirectory a
        # SIGTERM interrupts between its making and its `with` is left behind, but not outside this folder.
        self.tempdir, tempfile.tempdir = tempfile.tempdir, str(self.folder)
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.stop()  # first: a child still running would write into the folder
        finally:
            tempfile.tempdir = self.tempdir
            shutil.rmtree(self.folder, ignore_errors=True)

    def start(self, command: list[str], env: dict[str, str] | None = None, **kwargs) -> subprocess.Popen:
        return super().start(command, env={**(env or os.environ), "TMPDIR": str(self.folder)}, **kwargs)

    def run(self, command: list[str], env: dict[str, str] | None = None, timeout: float | None = None):
        """subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout), as one of these."""
        proc = self.start(command, env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise
        return subprocess.CompletedProcess(command, proc.returncode, out, err)


def index_url() -> str:
    """The index the plan resolves from: PIP_INDEX_URL (a build argument of the Dockerfile too), else PyPI. The host's
    pip configuration is not read: the image's build does not see it (PASSED). Held to the build arguments' URL form
    before any request: a user name and password in it were taken for the host (`Name or service not known`, blamed
    on the network) and printed in full (sweep 8 N6)."""
    url = os.environ.get("PIP_INDEX_URL") or "https://pypi.org/simple"
    if why := _bad_setting("PIP_INDEX_URL", url):
        raise _refused("PIP_INDEX_URL", url, why)
    return url


def unreachable(where: str) -> UserError:
    return UserError(
        f"cannot reach the package index {index_url()} {where}",
        "check the network or PIP_INDEX_URL: a plan made without the index would be stale",
        code=2,
    )


def unpacked_pip(cache: Path, children: PlanChildren | None = None) -> Path:
    """A folder holding the planner's pip, unpacked from its wheel once (a venv made with ensurepip and then upgraded
    took 9.5 s of a cold plan; this takes 1.6 s). The host's own pip downloads it, from the index pip is set up for,
    as one of the plan's `children` (of its own when none). Unpacked beside and renamed in, so that the folder, when
    there, is whole."""
    folder = pip_folder(cache)
    if folder.is_dir():
        return folder
    if children is None:
        with PlanChildren() as own:
            return unpacked_pip(cache, own)
    wanted = planner_pip()
    # The first request of a cold plan: an index that never answers is named within index_http.TIMEOUT, where pip's
    # own retries and timeouts kept a cold `make plan` silent for minutes (sweep 4 row 21). The plan cannot be made
    # without this index, whichever the host's pip downloads its own from (bounded the same way).
    try:
        index_http.get(f"{index_url().rstrip('/')}/pip/")
    except index_http.Unreachable as exc:
        raise unreachable(f"(setting up the planner: {exc})") from None
    download = Path(tempfile.mkdtemp(prefix="pip-download-", dir=children.folder))
    bounded = ["--timeout", f"{index_http.TIMEOUT:g}", "--retries", "0"]
    command = [sys.executable, "-m", "pip", "download", "-q", *bounded, "--no-deps", "--only-binary=:all:"]
    proc = children.run([*command, f"pip=={wanted}", "-d", str(download)])
    wheels = list(download.glob("pip-*.whl"))
    if proc.returncode != 0 or not wheels:
        raise EnvSetupError(f"pip=={wanted} could not be downloaded for the planner: {proc.stderr.strip()[-300:]}")
    cache.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f"{folder.name}.", suffix=PARTIAL, dir=cache))
    partial.chmod(0o755)  # mkdtemp makes it private; the cache is shared like the rest of .cache
    # In a child process: in the planner's, the threads fetching the index ahead would slow it down fourfold.
    _child(children, [python312(), "-m", "zipfile", "-e", str(wheels[0]), str(partial)], f"unpacking pip into {cache}")
    try:
        partial.rename(folder)
    except OSError:  # another plan unpacked it first
        shutil.rmtree(partial)
    return folder


def _child(children: PlanChildren, command: list[str], doing: str) -> None:
    """A child process the planner's cache is made with; its failure (a full disk, say) is an EnvSetupError that
    says what it was doing and what the child said."""
    proc = children.run(command)
    if proc.returncode != 0:
        raise EnvSetupError(f"{doing} failed: {(proc.stderr or proc.stdout).strip()[-300:]}")


# What of pip's own settings reaches the planner's pip: the index settings the Dockerfile declares as build arguments
# (inputs of the build as much as of the plan) and how to reach the network. Never the host's pip configuration files
# or its other PIP_ variables (a constraint, find-links, an extra index): the image's build sees none of them.
PASSED = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST", "PIP_CERT", "PIP_PROXY", "PIP_DEFAULT_TIMEOUT")


def pip_settings() -> dict[str, str]:
    """The PIP_ variables the planner passes on (PASSED), as they are set now, each checked: pip would fail on a bad
    one later, in a way that names something else (an index it cannot reach, a step it cannot see)."""
    settings = {k: os.environ[k] for k in PASSED if os.environ.get(k)}
    for name, value in settings.items():
        why = _bad_setting(name, value)
        if why:
            raise _refused(name, value, why)
    return settings


def _refused(name: str, value: str, why: str) -> UserError:
    """The one refusal of a PASSED setting, its value shown as messages show a URL (a password as ***)."""
    said = url_form.said_hosts(value) if name in url_form.HOSTS else url_form.said(value)
    return UserError(f"{name}={said}: {why}", f"set {name} to {_GOOD[name]}, or unset it", code=2)


# Sweep 9 F1: a file: index passed the form check, then was dialled as a host ("Name or service not known").
LOCAL_INDEX = (
    "is a file: URL, which the planner and lock_hashes ask over HTTP and the build's pip, in its container, cannot read"
)
_GOOD = {
    "PIP_INDEX_URL": "the http(s) URL of an index's root, with no USER:PASSWORD@ (the build's log would show it), no "
    "?QUERY and no #FRAGMENT: a local index served over HTTP",
    "PIP_EXTRA_INDEX_URL": "http(s) URLs of index roots separated by spaces, with no USER:PASSWORD@, no ?QUERY and no "
    "#FRAGMENT",
    "PIP_TRUSTED_HOST": "host names or HOST:PORT pairs separated by spaces, with no scheme and no USER:PASSWORD@",
    "PIP_CERT": "a CA bundle file",
    "PIP_PROXY": "a proxy URL, [scheme://][user:password@]host:port",
    "PIP_DEFAULT_TIMEOUT": f"a number of seconds above 0 and at most {DAY:.0f}",
}


def _bad_setting(name: str, value: str) -> str | None:
    """Why a PASSED variable's value is none pip can use, or None."""
    if name == "PIP_DEFAULT_TIMEOUT":
        try:
            Number(name, float, above=0, high=DAY, setting=True)(value)
        except UserError:
            return f"not a number of seconds above 0 and at most {DAY:.0f}"
        return None
    if name in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"):
        if not value.split():
            return "not a URL pip reads an index from"
        bad = [f"{url_form.said(u)} {why}" for u in value.split() if (why := url_form.problem(name, u))]
        bad += [f"{url_form.said(u)} {LOCAL_INDEX}" for u in value.split() if not u.lower().startswith("http")]
        return f"not a URL pip reads an index from: {bad[0]}" if bad else None
    if name == "PIP_CERT":
        return None if os.path.isfile(value) else "no such file"
    if name == "PIP_PROXY":
        return None if value.strip() and " " not in value.strip() else "not a proxy address"
    return url_form.hosts_problem(value)  # PIP_TRUSTED_HOST, the one left


def pip_environment(**extra: str) -> dict[str, str]:
    """The environment of the planner's pip runs: no pip configuration of the host's (PASSED says what passes).
    Bytecode is written even where PYTHONDONTWRITEBYTECODE is set: pip lies in the planner's cache, and without it
    every pip run of a plan compiles pip afresh (1.7 s each)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") and k != "PYTHONDONTWRITEBYTECODE"}
    settings = {"PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    return {**env, **pip_settings(), **settings, **extra}


class FakeEnv:
    """Distributions as dist-info folders in a venv built once and reused; pip lives beside it (a .pth line), so
    that a copy of the dist-info folders alone can be checked apart (check_later). Used inside `running()`, which
    starts every child it runs (PlanChildren)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.python = folder / "bin" / "python"
        self._site: Path | None = None
        self._known: dict[str, tuple[Path, str]] | None = None
        self._pip: Path | None = None
        self._children: PlanChildren | None = None

    @contextlib.contextmanager
    def running(self):
        """The environment in use: its children's temporary folder beside it (a plan killed outright leaves it to the
        next one's create(), under the environment's lock), every child stopped and the folder removed at the end."""
        with PlanChildren(self.folder.parent, self.folder.name) as children:
            self._children = children
            try:
                yield self
            finally:
                self._children = None

    @property
    def children(self) -> PlanChildren:
        if self._children is None:
            raise RuntimeError("FakeEnv used outside `with env.running()`: its children would outlive it")
        return self._children

    @property
    def _stamp(self) -> Path:
        return self.folder / ".made-with"  # written before the venv is renamed in: a venv without it is not the one

    @staticmethod
    def _made_with() -> str:
        """What the venv is made of: the planner's pip and the interpreter, so that a change of either remakes it."""
        return f"pip {planner_pip()} beside; python {interpreter(python312())}\n"

    def ready(self) -> bool:
        """Whether create() will find the venv and its pip already made (and so take milliseconds)."""
        stamp = self._stamp
        return stamp.is_file() and stamp.read_text() == self._made_with() and pip_folder(self.folder.parent).is_dir()

    def create(self) -> None:
        """Make the venv, or take the one made before when it was made with the same pip and Python; remove what an
        interrupted or failed plan left (a venv half made, a dist-info half written, a copy pip check was reading).
        The venv is made beside and renamed in, so that a plan never finds one half made. Call it holding the
        environment's lock (exclusive)."""
        # The planner's pip beside every venv of this cache, and this venv, as an interrupted plan left them making
        # them (one platform is supported, so this lock is the only one under which pip is unpacked).
        for leftover in [
            *self.folder.parent.glob(f"pip-*{PARTIAL}"),
            *self.folder.parent.glob(f"{self.folder.name}.*{PARTIAL}"),
        ]:
            if leftover != self.children.folder:
                _discard(leftover)
        wanted = self._made_with()
        self._pip = unpacked_pip(self.folder.parent, self.children)
        if not (self._stamp.is_file() and self._stamp.read_text() == wanted):
            partial = Path(tempfile.mkdtemp(prefix=f"{self.folder.name}.", suffix=PARTIAL, dir=self.folder.parent))
            command = [python312(), "-m", "venv", "--without-pip", str(partial)]
            _child(self.children, command, f"making a venv in {partial}")
            site = next((partial / "lib").glob("python3.*/site-packages"))
            (site / "_planner_pip.pth").write_text(f"{self._pip}\n")
            (partial / self._stamp.name).write_text(wanted)
            _discard(self.folder)
            partial.rename(self.folder)
            self._site = None
        for leftover in [*self.folder.glob("check-*"), *self.site.glob(f".*{PARTIAL}")]:
            _discard(leftover)
        self.clear()

    @property
    def site(self) -> Path:
        if self._site is None:
            self._site = next((self.folder / "lib").glob("python3.*/site-packages"))
        return self._site

    def _distributions(self) -> dict[str, tuple[Path, str]]:
        """canonical name -> (dist-info folder, version), read from the metadata once, then kept as add and
        remove change it (the planner's pip only runs with --dry-run; after a real install, read a new FakeEnv)."""
        if self._known is None:
            self._known = {}
            for info in self.site.glob("*.dist-info"):
                meta = importlib.metadata.PathDistribution(info).metadata
                if canonicalize_name(meta["Name"]) != "pip":
                    self._known[canonicalize_name(meta["Name"])] = (info, meta["Version"])
        return self._known

    def clear(self) -> None:
        """Empty the environment, reading nothing of what is there: an interrupted plan may have left a dist-info
        folder it was removing, or one written before this planner staged its writes."""
        for info in self.site.glob("*.dist-info"):
            _discard(info)
        self._known = {}

    def installed(self) -> dict[str, str]:
        return {name: version for name, (_, version) in self._distributions().items()}

    def remove(self, name: str) -> bool:
        found = self._distributions().pop(canonicalize_name(name), None)
        if found:
            shutil.rmtree(found[0])
        return found is not None

    def add(self, dist: Dist) -> None:
        """Write a distribution's dist-info beside and rename it in: pip never sees one half written."""
        self.remove(dist.name)
        info = self.site / f"{canonicalize_name(dist.name).replace('-', '_')}-{dist.version}.dist-info"
        staged = Path(tempfile.mkdtemp(prefix=f".{info.name}.", suffix=PARTIAL, dir=self.site))
        try:  # one it could not finish goes now, not at the next plan's create()
            staged.chmod(0o755)
            (staged / "METADATA").write_text(dist.metadata())
            (staged / "INSTALLER").write_text("slime-image-planner\n")
            files: tuple[str, ...] = ("METADATA", "INSTALLER", "RECORD")
            if dist.wheel_tags:  # pip check compares these with the interpreter's tags (W29)
                tags = "".join(f"Tag: {tag}\n" for tag in dist.wheel_tags)
                (staged / "WHEEL").write_text(f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\n{tags}")
                files = ("WHEEL", *files)
            # A RECORD naming the folder's own files lets a real pip uninstall it (the fidelity benchmark's replay).
            (staged / "RECORD").write_text("".join(f"{info.name}/{name},,\n" for name in files))
            staged.rename(info)
        except BaseException:
            _discard(staged)
            raise
        self._distributions()[canonicalize_name(dist.name)] = (info, dist.version)

    def pip(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
        return self.children.run([str(self.python), "-m", "pip", *args], pip_environment(), timeout)

    def check(self) -> list[str]:
        """`pip check` lines: what is broken in the environment now."""
        return self.check_later()()

    def check_later(self) -> Callable[[], list[str]]:
        """Start `pip check` of the environment as it is now and return what waits for its lines, so that the
        planner resolves its next step meanwhile. pip checks a copy of the dist-info folders, with the image's
        Python and nothing else on its path. Cached by the metadata it reads."""
        state = hashlib.sha256()
        infos = sorted(self.site.glob("*.dist-info"))
        for info in infos:
            wheel = info / "WHEEL"
            state.update(
                info.name.encode() + (info / "METADATA").read_bytes() + (wheel.read_bytes() if wheel.exists() else b"")
            )
        cached = self.folder.parent / "checks" / f"{state.hexdigest()[:20]}.json"
        kept = cached_json(cached)
        if isinstance(kept, list):
            return lambda: kept
        copy = Path(tempfile.mkdtemp(prefix="check-", dir=self.folder))  # create() removes one an interruption left
        for info in infos:  # what pip check reads, linked: add and remove replace folders, never a file in one
            (copy / info.name).mkdir()
            for name in ("METADATA", "WHEEL"):
                if (info / name).exists():
                    os.link(info / name, copy / info.name / name)
        env = pip_environment(PYTHONPATH=f"{copy}:{self._pip}")
        command = [python312(), "-S", "-m", "pip", "check"]
        proc = self.children.start(command, env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

        def lines() -> list[str]:
            out, _ = proc.communicate()
            shutil.rmtree(copy, ignore_errors=True)
            # Only a whole answer is kept: pip check stopped (Ctrl-C reaches it too) says nothing, which kept would be
            # "nothing broken" to every later plan of this environment.
            if proc.returncode not in (0, 1) or (proc.returncode == 1 and not out.strip()):
                raise UserError(
                    f"pip check of the planner's environment ended without an answer (exit {proc.returncode})",
                    "run the plan again",
                    code=2,
                )
            broken = [c.line for c in pip_conflicts.conflicts(out)]
            write_atomically(cached, json.dumps(broken))
            return broken

        return lines


def dist_from_report(item: dict, wheel_tags: dict[str, list[str]] | None = None) -> Dist:
    meta = item["metadata"]
    url = item.get("download_info", {}).get("url", "")
    return Dist(
        wheel_tags=(wheel_tags or {}).get(url, []),
        name=meta["name"],
        version=meta["version"],
        requires=list(meta.get("requires_dist", [])),
        requires_python=meta.get("requires_python"),
        extras=list(meta.get("provides_extra", [])),
    )


def is_distribution(entry: object, requires: str) -> bool:
    """An entry that names a distribution: its name and version as text, and its requirements (under `requires`: a
    base manifest's `requires`, pip inspect's `requires_dist`) a list of text when it has them."""
    return (
        isinstance(entry, dict)
        and all(isinstance(entry.get(key), str) for key in ("name", "version"))
        and isinstance(entry.get(requires, []), list)
        and all(isinstance(r, str) for r in entry.get(requires, []))
    )


_NAME = re.compile(r"[A-Z0-9](?:[A-Z0-9._-]*[A-Z0-9])?", re.IGNORECASE | re.ASCII)  # a project name (PEP 508)


def listing_problems(entries: list[dict]) -> list[str]:
    """What keeps a list of distributions (is_distribution's entries) from being one an environment holds, each named:
    a name that is no project name, a version that is no PEP 440 version (nor one with blanks or a newline around it,
    which Version takes), a name twice as PEP 503 normalizes it. pip inspect writes none of them; taken in, a name's
    `../` and blanks reached the planner's path of its dist-info folder (sweep 7 W4)."""
    problems, seen = [], {}
    for entry in entries:
        name, version = entry["name"], entry["version"]
        if not _NAME.fullmatch(name):
            problems.append(f"{name[:80]!r} is no distribution name")
            continue
        try:
            Version(version)
            if version != version.strip():  # Version takes blanks around it, a newline too: METADATA's lines split
                raise InvalidVersion(version)
        except InvalidVersion:
            problems.append(f"{name} {version[:80]!r} is no PEP 440 version")
        if canonicalize_name(name) in seen:
            problems.append(f"{name} is listed twice (as {seen[canonicalize_name(name)]!r} too)")
        seen.setdefault(canonicalize_name(name), name)
    return problems


def load_manifest(path: Path) -> tuple[dict, list[Dist]]:
    """A base-image manifest (`make base-manifest`): the image's Python distributions with their requirements."""
    fix = "pass a manifest written by `make base-manifest` (base-manifests/ holds the shipped ones)"
    tree_reads.check(path)  # a FIFO is no missing manifest
    if not path.is_file():
        raise UserError(f"no base-image manifest at {path}", "run `make base-manifest` with Docker")
    try:
        data = json_input.loads(tree_reads.read_text(path), unique=True)  # a key twice: json keeps the last, unsaid
    except ValueError as exc:
        raise UserError(f"the base manifest {path} is not JSON: {exc}", fix) from None
    entries = data.get("distributions") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not all(is_distribution(d, "requires") for d in entries):
        raise UserError(f"the base manifest {path} has no `distributions` list of name/version entries", fix)
    problems = listing_problems(entries)
    if problems:
        raise UserError(f"the base manifest {path} lists what no environment holds: {'; '.join(problems)}", fix)
    return data, [Dist(d["name"], d["version"], list(d.get("requires", []))) for d in entries]


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
