"""slime's own patches (W20) applied by slime-patch, against the real sglang 0.5.12.post1 wheel from PyPI and a
Megatron-shaped tree. The patch files are written here, in upstream's format (paths a/python/sglang/... and
a/megatron/...), changing real lines of those files; none of slime's patches is in this repository."""

import difflib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

import artifacts
import pytest
import shapes
from conftest import IMAGE_BIN, by_id, run_suite
from slime_image.patches import PATCHES, upstream

pytestmark = pytest.mark.slow
PATCHER = IMAGE_BIN / "slime-patch"
SGLANG = "sglang==0.5.12.post1"
HTTP_SERVER = "sglang/srt/entrypoints/http_server.py"
ARGUMENTS = "megatron/training/arguments.py"
UPSTREAM = "slime-megatron-patch,slime-sglang-patch"


def diff(tree, relative, prefix, old, new):
    """A unified diff in upstream's format that replaces the line `old` of tree/relative by `new` lines."""
    lines = (tree / relative).read_text().splitlines(keepends=True)
    assert lines.count(old) == 1, f"{old!r} is not one line of {relative}"
    changed = [*lines[: lines.index(old)], *new, *lines[lines.index(old) + 1 :]]
    name = f"{prefix}{relative}"
    body = difflib.unified_diff(lines, changed, fromfile=f"a/{name}", tofile=f"b/{name}")
    return f"diff --git a/{name} b/{name}\n" + "".join(body)


SGLANG_OLD = '@app.post("/update_weights_from_tensor")\n'
SGLANG_NEW = ['@app.post("/post_process_weights")  # slime-image test patch\n', SGLANG_OLD]
MEGATRON_OLD = '        assert args.fp16, "lm cross entropy in fp16 only support in fp16 mode."\n'
MEGATRON_NEW = [
    MEGATRON_OLD,
    '    args.disable_grad_buffers_cpu_backup = getattr(args, "disable_grad_buffers_cpu_backup", False)\n',
]


@pytest.fixture
def trees(tmp_path):
    """A slime tree carrying docker/patch/v0.5.12.post1/, a Megatron-shaped tree, and the real sglang wheel (its files
    linked to the cache's: artifacts.linked)."""
    with artifacts.linked(SGLANG, tmp_path / "site-packages") as site:
        megatron = shapes.megatron_tree(tmp_path / "megatron", "pinned")
        slime = shapes.slime_tree(tmp_path / "slime", selection="v0.3.0")
        folder = slime / "docker" / "patch" / "v0.5.12.post1"
        folder.mkdir(parents=True)
        (folder / "sglang.patch").write_text(diff(site, HTTP_SERVER, "python/", SGLANG_OLD, SGLANG_NEW))
        (folder / "megatron.patch").write_text(diff(megatron, ARGUMENTS, "", MEGATRON_OLD, MEGATRON_NEW))
        write_order(slime, "megatron.patch", "sglang.patch", "sglang-top_p.patch", "sglang-pull_weights.patch")
        yield slime, megatron, site


def write_order(slime, *files):
    """slime's docker/Dockerfile as far as the patcher reads it: the patch files it applies, in its order (a recipe
    written here, shaped as slime's: one loop over the names, beside a COPY of a glob that names none)."""
    (slime / "docker").mkdir(exist_ok=True)
    (slime / "docker" / "Dockerfile").write_text(
        "COPY docker/patch/${PATCH_VERSION}/sglang*.patch /work/\n"
        f"RUN for p in {' '.join(files)}; do [ -f $p ] && git apply $p; done\n"
    )


def one_file(site, folder):
    """A tree of the one file sglang.patch changes, for `git apply` to make the next patch of a series from."""
    (folder / HTTP_SERVER).parent.mkdir(parents=True)
    shutil.copy(site / HTTP_SERVER, folder / HTTP_SERVER)
    return folder


def patch(slime, megatron, site, *extra):
    args = [sys.executable, str(PATCHER), "--slime-root", str(slime), "--megatron-root", str(megatron)]
    proc = subprocess.run([*args, "--sglang-root", str(site), "--json", *extra], capture_output=True, text=True)
    report = json.loads(proc.stdout) if proc.stdout.startswith("{") else None
    assert report is not None, proc.stderr
    return proc.returncode, report, {p["id"]: p["status"] for p in report["patches"]}


def snapshot(*roots):
    return {p: p.read_bytes() for root in roots for p in sorted(root.rglob("*.py"))}


@pytest.mark.guard_fails("patch:slime-megatron-patch", "patch:slime-sglang-patch")
def test_check_fails_then_apply_then_already_applied_with_identical_bytes(trees):
    _slime, megatron, site = trees
    before = snapshot(megatron, site)
    code, report, statuses = patch(*trees, "--only", UPSTREAM, "--check")
    assert code == 1 and statuses == {"slime-megatron-patch": "would-apply", "slime-sglang-patch": "would-apply"}
    assert report["upstream"].startswith("docker/patch/v0.5.12.post1 (for the installed SGLang 0.5.12.post1)")
    assert snapshot(megatron, site) == before
    code, _, statuses = patch(*trees, "--only", UPSTREAM)
    assert code == 0 and set(statuses.values()) == {"applied"}
    after = snapshot(megatron, site)
    assert "/post_process_weights" in (site / HTTP_SERVER).read_text()
    assert "disable_grad_buffers_cpu_backup" in (megatron / ARGUMENTS).read_text()
    code, _, statuses = patch(*trees, "--only", UPSTREAM)
    assert code == 0 and set(statuses.values()) == {"already-applied"}
    assert snapshot(megatron, site) == after
    code, _, _ = patch(*trees, "--only", UPSTREAM, "--check")
    assert code == 0


def test_trees_inside_another_git_repository_are_patched(trees):
    """Sweep 8 N1: a Megatron or SGLang tree in a subfolder of another repository (a venv's site-packages in a project
    checkout): git apply took the patch's paths from that repository's top, skipped them all, and said nothing, so
    slime-patch said `applied`, every run, while no file changed."""
    _slime, megatron, site = trees
    subprocess.run(["git", "init", "-q", str(site.parent)], check=True)
    code, _, statuses = patch(*trees, "--only", UPSTREAM)
    assert code == 0 and set(statuses.values()) == {"applied"}, statuses
    assert "/post_process_weights" in (site / HTTP_SERVER).read_text()
    assert "disable_grad_buffers_cpu_backup" in (megatron / ARGUMENTS).read_text()
    code, _, statuses = patch(*trees, "--only", UPSTREAM)
    assert code == 0 and set(statuses.values()) == {"already-applied"}, statuses


def test_a_series_applies_in_slime_s_order_each_patch_on_the_one_before_and_reads_back_as_applied(trees):
    """slime v0.3.1's SGLang patches are a series (sglang.patch, then sglang-pull_weights.patch ...): the later one
    changes a line the first one added, so it applies only after it, and the reverse only last patch first."""
    slime, _megatron, site = trees
    folder = slime / "docker" / "patch" / "v0.5.12.post1"
    patched = one_file(site, site.parent / "series-step")
    subprocess.run(["git", "apply", "-p2", str(folder / "sglang.patch")], cwd=patched, check=True)
    later = diff(patched, HTTP_SERVER, "python/", SGLANG_NEW[0], ['@app.post("/post_process_weights")  # series\n'])
    (folder / "sglang-pull_weights.patch").write_text(later)
    alone = subprocess.run(["git", "apply", "-p2", "--check", str(folder / "sglang-pull_weights.patch")], cwd=site)
    assert alone.returncode != 0, "the later patch must not apply without the earlier one"
    code, report, statuses = patch(*trees, "--only", "slime-sglang-patch")
    assert code == 0 and statuses == {"slime-sglang-patch": "applied"}, report
    assert "sglang.patch" in report["patches"][0]["message"]
    assert "sglang-pull_weights.patch" in report["patches"][0]["message"]
    assert '@app.post("/post_process_weights")  # series' in (site / HTTP_SERVER).read_text()
    code, _, statuses = patch(*trees, "--only", "slime-sglang-patch")
    assert code == 0 and statuses == {"slime-sglang-patch": "already-applied"}


def test_a_hunk_that_does_not_apply_is_an_error_and_no_tree_changes(trees):
    _slime, megatron, site = trees
    server = site / HTTP_SERVER
    text = server.read_text()
    server.unlink()  # the cache's file, linked: written anew, not into
    server.write_text(text.replace(SGLANG_OLD, '@app.post("/update_weights_from_tensors")\n'))
    before = snapshot(megatron, site)
    code, report, statuses = patch(*trees)
    assert code == 1 and statuses["slime-sglang-patch"] == "error"
    message = next(p["message"] for p in report["patches"] if p["id"] == "slime-sglang-patch")
    assert "error: patch failed: sglang/srt/entrypoints/http_server.py:" in message
    assert snapshot(megatron, site) == before, "the Megatron patch, which would apply, must not be written either"


def test_the_image_s_own_megatron_patch_applies_on_top_of_upstream_s(trees):
    _slime, megatron, _site = trees
    # The start's patches (W56, W57) need slime's real engine, rollout and placement modules, which this shaped tree
    # lacks: they are applied to the real trees of both pairings in test_patch_parallel_imports.py and
    # test_patch_rollout_imports.py.
    from slime_image.patches import PATCHES

    ids = ["slime-megatron-patch", "slime-sglang-patch", *(p.ID for p in PATCHES if not {"W56", "W57"} & set(p.WALLS))]
    code, _, statuses = patch(*trees, "--only", ",".join(ids))
    assert code == 0 and set(statuses.values()) == {"applied"}, statuses
    text = (megatron / ARGUMENTS).read_text()
    assert "disable_grad_buffers_cpu_backup" in text and "torch.cuda.is_available() and" in text
    compile(text, str(megatron / ARGUMENTS), "exec")
    code, report, statuses = patch(*trees, "--check", "--only", ",".join(ids))
    assert code == 0 and set(statuses.values()) == {"already-applied"}, report


def test_an_error_in_a_later_patch_undoes_what_the_run_wrote(trees, tmp_path):
    slime, megatron, site = trees
    mutated = shapes.slime_tree(tmp_path / "mutated", selection="mutated")
    shutil.copytree(slime / "docker", mutated / "docker")
    before = snapshot(megatron, site)
    code, report, statuses = patch(mutated, megatron, site)
    assert code == 1 and statuses["tms-preload-cuda-aware"] == "error"
    assert statuses["slime-megatron-patch"] == statuses["slime-sglang-patch"] == "would-apply"
    assert all(p["message"].startswith("undone: ") for p in report["patches"] if p["id"] in UPSTREAM.split(","))
    assert snapshot(megatron, site) == before


def test_latest_is_chosen_when_no_folder_names_the_version(trees):
    slime, _megatron, _site = trees
    (slime / "docker/patch/v0.5.12.post1").rename(slime / "docker/patch/latest")
    code, report, statuses = patch(*trees, "--only", UPSTREAM)
    assert code == 0 and set(statuses.values()) == {"applied"}
    assert report["upstream"].startswith("docker/patch/latest: no folder for SGLang 0.5.12.post1, so the one slime's")


def test_no_patch_folder_is_not_needed_and_said_loudly(trees):
    slime, megatron, site = trees
    shutil.rmtree(slime / "docker")
    args = ["--slime-root", str(slime), "--megatron-root", str(megatron), "--sglang-root", str(site)]
    proc = subprocess.run([sys.executable, str(PATCHER), *args, "--only", UPSTREAM], capture_output=True, text=True)
    assert proc.returncode == 0
    assert "slime-sglang-patch           not-needed       NO UPSTREAM PATCH:" in proc.stdout
    assert "WARNING: slime-megatron-patch: NO UPSTREAM PATCH:" in proc.stderr


def suite(trees, *only):
    slime, megatron, site = trees
    args = ["--only", ",".join(only), "--slime-root", str(slime), "--megatron-root", str(megatron)]
    _code, report, stderr = run_suite(sys.executable, *args, "--sglang-root", str(site))
    assert report is not None, stderr
    return by_id(report)


@pytest.mark.guard_fails("check:upstream-patches")
def test_the_upstream_patches_check_fails_until_slime_patch_ran(trees):
    check = suite(trees, "upstream-patches")["upstream-patches"]
    assert check["status"] == "fail" and check["walls"] == ["W20"]
    assert check["summary"] == "slime's own patches not applied: slime-megatron-patch, slime-sglang-patch"
    assert "slime-patch --slime-root" in check["fix"]
    patch(*trees, "--only", UPSTREAM)
    check = suite(trees, "upstream-patches")["upstream-patches"]
    assert check["status"] == "pass" and check["summary"] == "slime's own patches applied (docker/patch/v0.5.12.post1)"


def test_no_patches_for_this_sglang_is_a_warning(trees):
    slime, _megatron, _site = trees
    shutil.rmtree(slime / "docker")
    check = suite(trees, "upstream-patches")["upstream-patches"]
    assert check["status"] == "warn" and "slime ships no patches for this SGLang" in check["summary"]


def test_the_record_names_the_patch_files_with_their_sha256(trees, tmp_path):
    slime, _megatron, site = trees
    out = tmp_path / "versions.json"
    env = {**os.environ, "PYTHONPATH": str(site), "SLIME_REF": "v0.3.0"}
    record = [
        sys.executable,
        str(IMAGE_BIN / "slime-record"),
        "--out",
        str(out),
        "--slime-root",
        str(slime),
        "SLIME_REF",
    ]
    subprocess.run(record, env=env, check=True)
    recorded = json.loads(out.read_text())["upstream_patches"]
    folder = slime / "docker/patch/v0.5.12.post1"
    assert recorded["files"] == {
        f"docker/patch/v0.5.12.post1/{name}": hashlib.sha256((folder / name).read_bytes()).hexdigest()
        for name in ("megatron.patch", "sglang.patch")
    }


def test_a_read_only_slime_tree_is_refused_before_any_tree_is_written(trees):
    # As a user's image layer can be: slime's tree mounted read-only in a private mount namespace (needs root).
    slime, megatron, site = trees
    before = snapshot(slime, megatron, site)
    read_only = 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" && shift && exec "$@"'
    args = [sys.executable, str(PATCHER), "--slime-root", str(slime), "--megatron-root", str(megatron)]
    command = ["unshare", "-m", "sh", "-c", read_only, "sh", str(slime), *args, "--sglang-root", str(site), "--json"]
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0 and not proc.stdout.startswith("{"):
        pytest.skip(f"no private read-only mount here: {proc.stderr.strip()}")
    report = json.loads(proc.stdout)
    statuses = {p["id"]: (p["status"], p["message"]) for p in report["patches"]}
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    status, message = statuses["tms-preload-cuda-aware"]
    assert (
        status == "error"
        and message.startswith(f"cannot write {slime}/slime/ray/")
        and message.endswith("; nothing written")
    )
    assert statuses["slime-megatron-patch"][0] == statuses["slime-sglang-patch"][0] == "would-apply"
    assert snapshot(slime, megatron, site) == before


# The series the pairing declares (SLIME_PATCHES, passed as --series): the chosen folder must hold exactly it.


def declared(slime, *files):
    folder = slime / "docker" / "patch" / "v0.5.12.post1"
    digest = {f: hashlib.sha256((folder / f).read_bytes()).hexdigest()[:16] for f in files}
    return "v0.5.12.post1: " + " ".join(f"{f}@{digest[f]}" for f in files)


def test_the_declared_series_applies(trees):
    code, _, statuses = patch(
        *trees, "--only", UPSTREAM, "--series", declared(trees[0], "megatron.patch", "sglang.patch")
    )
    assert code == 0 and set(statuses.values()) == {"applied"}


@pytest.mark.guard_fails("patch:slime-sglang-patch")
def test_a_new_upstream_patch_file_the_series_does_not_declare_fails_loudly_and_nothing_is_written(trees):
    slime, megatron, site = trees
    series = declared(slime, "megatron.patch", "sglang.patch")
    folder = slime / "docker" / "patch" / "v0.5.12.post1"
    (folder / "sglang-new_feature.patch").write_text((folder / "sglang.patch").read_text())
    before = snapshot(megatron, site)
    code, report, statuses = patch(*trees, "--only", UPSTREAM, "--series", series)
    assert code == 1 and set(statuses.values()) == {"error"}
    message = report["patches"][0]["message"]
    assert (
        "sglang-new_feature.patch is in v0.5.12.post1/ but not declared, and slime's docker/Dockerfile does not "
        "apply it" in message
    )
    assert message.endswith("nothing written") and snapshot(megatron, site) == before


def test_a_changed_patch_file_and_another_folder_are_named(trees):
    slime = trees[0]
    series = declared(slime, "megatron.patch", "sglang.patch")
    (slime / "docker/patch/v0.5.12.post1/megatron.patch").write_text("diff --git a/x b/x\n")
    _, report, _ = patch(*trees, "--only", UPSTREAM, "--series", series)
    assert "megatron.patch is sha256 " in report["patches"][0]["message"]
    _, report, _ = patch(*trees, "--only", UPSTREAM, "--series", series.replace("v0.5.12.post1:", "v0.5.15.post1:"))
    assert "slime chose v0.5.12.post1/, but the pairing declares v0.5.15.post1/" in report["patches"][0]["message"]


def test_a_series_that_is_not_one_is_bad_usage(trees):
    args = [sys.executable, str(PATCHER), "--slime-root", str(trees[0]), "--series", "megatron.patch"]
    proc = subprocess.run(args, capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "--series 'megatron.patch' is not a patch series: its form is FOLDER: FILE@SHA256PREFIX" in proc.stderr


def test_each_pairing_declares_its_slime_trees_series():
    """The pairings' SLIME_PATCHES against the real slime trees at their commits (the mirror), where it is here."""
    mirror = os.environ.get("SLIME_MIRROR", "/work/.mirror/THUDM+slime/repo")
    if not os.path.isdir(mirror):
        pytest.skip(f"no slime mirror at {mirror} (SLIME_MIRROR)")
    from tools.inputs import pairings

    for name in pairings.names():
        pairing = pairings.load(name)
        folder, entries = upstream.parse_series(pairing.args["SLIME_PATCHES"])
        listed = subprocess.run(
            ["git", "-C", mirror, "ls-tree", "--name-only", pairing.args["SLIME_COMMIT"], f"docker/patch/{folder}/"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert sorted(os.path.basename(p) for p in listed) == sorted(f for f, _ in entries), name
        for file, digest in entries:
            blob = subprocess.run(
                ["git", "-C", mirror, "show", f"{pairing.args['SLIME_COMMIT']}:docker/patch/{folder}/{file}"],
                capture_output=True,
                check=True,
            ).stdout
            assert hashlib.sha256(blob).hexdigest()[:16] == digest, (name, file)


def test_the_order_of_a_series_is_slime_s_dockerfile_s(trees):
    """A new patch file slime's Dockerfile names applies where it names it, with no change here; one it does not name
    stops the series, since where it goes is unknown."""
    slime, megatron, site = trees
    folder = slime / "docker" / "patch" / "v0.5.12.post1"
    patched = one_file(site, site.parent / "order-step")
    subprocess.run(["git", "apply", "-p2", str(folder / "sglang.patch")], cwd=patched, check=True)
    (folder / "sglang-deterministic.patch").write_text(
        diff(patched, HTTP_SERVER, "python/", SGLANG_NEW[0], ['@app.post("/post_process_weights")  # ordered\n'])
    )
    before = snapshot(megatron, site)
    code, report, statuses = patch(*trees, "--only", "slime-sglang-patch")
    assert code == 1 and statuses == {"slime-sglang-patch": "error"}, report
    assert (
        "holds sglang-deterministic.patch, which slime's docker/Dockerfile does not apply"
        in (report["patches"][0]["message"])
    )
    assert snapshot(megatron, site) == before
    write_order(slime, "megatron.patch", "sglang.patch", "sglang-deterministic.patch")
    code, report, statuses = patch(*trees, "--only", "slime-sglang-patch")
    assert code == 0 and statuses == {"slime-sglang-patch": "applied"}, report
    assert '@app.post("/post_process_weights")  # ordered' in (site / HTTP_SERVER).read_text()
    assert upstream.slime_order(slime) == ("megatron.patch", "sglang.patch", "sglang-deterministic.patch")


def run_patcher(*args, cwd=None):
    """slime-patch's exit code and its stdout and stderr lines."""
    proc = subprocess.run([sys.executable, str(PATCHER), *args], capture_output=True, text=True, cwd=cwd)
    return proc.returncode, proc.stdout.splitlines(), proc.stderr.strip().splitlines()


def root_options() -> list[str]:
    """slime-patch's options naming a tree it reads or patches, from its parser."""
    from unittest import mock

    from slime_image.options import InputPath, Parser
    from slime_image.patches import cli

    class Built(BaseException):
        pass

    def capture(self, args=None, namespace=None):
        raise Built(self)

    with mock.patch.object(Parser, "parse_args", capture), pytest.raises(Built) as built:
        cli.main([])
    return [a.option_strings[0] for a in built.value.args[0]._actions if isinstance(a.type, InputPath)]


def test_every_root_may_be_given_relative_to_the_callers_folder(trees, tmp_path):
    """Sweep 6 U8: git apply runs in the Megatron-LM or SGLang tree, and a patch path relative to the caller's folder
    named nothing there (`can't open patch`, the patch blamed)."""
    slime, megatron, site = trees
    given = {"--slime-root": slime, "--megatron-root": megatron, "--sglang-root": site}
    assert sorted(root_options()) == sorted(given)
    relative = [word for option, path in given.items() for word in (option, os.path.relpath(path, tmp_path))]
    before = snapshot(megatron, site)
    code, out, err = run_patcher(*relative, "--only", UPSTREAM, "--check", cwd=tmp_path)
    assert code == 1 and err == ["fix: run without --check to apply"], (out, err)
    assert snapshot(megatron, site) == before
    code, out, err = run_patcher(*relative, "--only", UPSTREAM, cwd=tmp_path)
    assert code == 0 and [line.split()[1] for line in out[1:]] == ["applied", "applied"], (out, err)


def roots(slime, megatron, site):
    return ["--slime-root", str(slime), "--megatron-root", str(megatron), "--sglang-root", str(site)]


# Each way a declared series differs from the chosen folder, as the declaration is edited.
MISMATCHES = {
    "a file's digest": lambda s: re.sub(r"megatron\.patch@\w+", "megatron.patch@" + "0" * 16, s),
    "another folder": lambda s: s.replace("v0.5.12.post1:", "v0.5.15.post1:"),
    "a file left out": lambda s: s.rsplit(" ", 1)[0],
    "another order": lambda s: "v0.5.12.post1: " + " ".join(reversed(s.split(": ", 1)[1].split())),
}
# The words of each mismatch's cause.
SAID = {
    "a file's digest": "megatron.patch is sha256 ",
    "another folder": "but the pairing declares v0.5.15.post1/",
    "a file left out": "sglang.patch is in v0.5.12.post1/ but not declared",
    "another order": "declared in another order than slime applies them",
}


@pytest.mark.parametrize("check", [["--check"], []], ids=["--check", "applying"])
@pytest.mark.parametrize("mismatch", list(MISMATCHES))
def test_a_series_mismatch_names_the_pairings_value_that_mends_it(trees, mismatch, check, tmp_path):
    """Sweep 6 U9: every mismatch said `fix: run without --check to apply`, which refuses the same: the fix is the
    pairing's SLIME_PATCHES (what the folder holds, written out) or the slime tree; the report's row says it too."""
    slime, megatron, site = trees
    holds = declared(slime, "megatron.patch", "sglang.patch")
    series = MISMATCHES[mismatch](holds)
    assert series != holds
    report = tmp_path / "r.json"
    before = snapshot(megatron, site)
    code, out, err = run_patcher(
        *roots(*trees), "--only", UPSTREAM, "--series", series, "--report-json", str(report), *check
    )
    assert code == 1 and len(err) == 1 and snapshot(megatron, site) == before, err
    assert any(SAID[mismatch] in line for line in out), out
    fix = f"set the pairing's SLIME_PATCHES to what it holds, {holds!r}"
    assert err[0].startswith(f"fix: if {slime} is the slime commit the pairing names") and fix in err[0], err
    assert {row["fix"] for row in json.loads(report.read_text())["checks"]} == {err[0].removeprefix("fix: ")}


def test_a_patch_declared_twice_is_named_so(trees):
    """Sweep 6 U9: `megatron.patch@X megatron.patch@X` was `declared in another order than slime applies them`."""
    twice = declared(trees[0], "megatron.patch", "megatron.patch", "sglang.patch")
    code, out, err = run_patcher(*roots(*trees), "--only", UPSTREAM, "--series", twice, "--check")
    assert code == 2 and not out and len(err) == 2, err
    assert "declares megatron.patch twice: a series names each patch file once" in err[0], err
    assert (
        err[1] == "fix: pass --series the pairing's SLIME_PATCHES value (FOLDER: FILE@SHA256PREFIX ..., each file once)"
    )


def _link_patch_out(slime, outside):
    patch = slime / "docker/patch/v0.5.12.post1/megatron.patch"
    patch.unlink()
    patch.symlink_to("/etc/passwd")
    return patch, f"is a link to /etc/passwd, outside the slime tree {slime}: no part of the release"


def _link_patch_to_a_copy(slime, outside):
    patch = slime / "docker/patch/v0.5.12.post1/megatron.patch"
    (outside / "megatron.patch").write_bytes(patch.read_bytes())
    patch.unlink()
    patch.symlink_to(outside / "megatron.patch")
    return patch, f"is a link to {outside / 'megatron.patch'}, outside the slime tree {slime}: no part of the release"


def _loop_patch(slime, outside):
    patch = slime / "docker/patch/v0.5.12.post1/megatron.patch"
    patch.unlink()
    patch.symlink_to("zz-loop.patch")
    (patch.parent / "zz-loop.patch").symlink_to("megatron.patch")
    return (
        patch,
        f"is a link loop (its links lead back to each other), in the slime tree {slime}: no file of the release",
    )


def _link_folder_out(slime, outside):
    folder = slime / "docker/patch/v0.5.12.post1"
    shutil.move(folder, outside / "v0.5.12.post1")
    folder.symlink_to(outside / "v0.5.12.post1")
    return folder, f"is a link to {outside / 'v0.5.12.post1'}, outside the slime tree {slime}: no part of the release"


def _link_dockerfile_out(slime, outside):
    recipe = slime / "docker/Dockerfile"
    shutil.move(recipe, outside / "Dockerfile")
    recipe.symlink_to(outside / "Dockerfile")
    return recipe, f"is a link to {outside / 'Dockerfile'}, outside the slime tree {slime}: no part of the release"


# What slime-patch reads of the slime tree (its Dockerfile's order, the chosen folder, each patch there), as a link.
LINKS = {
    "a patch to /etc/passwd": _link_patch_out,
    "a patch to a copy outside": _link_patch_to_a_copy,
    "a patch in a link loop": _loop_patch,
    "the patch folder": _link_folder_out,
    "slime's Dockerfile": _link_dockerfile_out,
}


@pytest.mark.parametrize("check", [["--check"], []], ids=["--check", "applying"])
@pytest.mark.parametrize("link", LINKS)
def test_a_file_of_the_slime_tree_that_links_out_of_it_is_refused(trees, link, check, tmp_path):
    """Sweep 6 U10: a patch linked to /etc/passwd was taken (the series matched its hash) and applied, as pairings
    draft and series refuse it (one check, upstream.refuse_link_out); a link loop is named as one."""
    slime, megatron, site = trees
    outside = tmp_path / "outside"
    outside.mkdir()
    path, said = LINKS[link](slime, outside)
    before = snapshot(megatron, site)
    code, out, err = run_patcher(*roots(*trees), "--only", UPSTREAM, *check)
    assert code == 2 and not out and len(err) == 2, (out, err)
    assert err[0] == f"slime-patch: {path} {said}", err
    assert err[1].startswith("fix: pass a checkout of the release whose files are its own"), err
    assert snapshot(megatron, site) == before


def test_a_series_unmet_for_want_of_an_installed_sglang_names_that_cause(trees):
    """Sweep 10 U6: with no SGLang found, slime's choice fell to latest/, and the fix asked to set the pairing's
    SLIME_PATCHES to latest/'s, though the pairing was right: the cause is the missing SGLang."""
    slime, megatron, _site = trees
    shutil.copytree(slime / "docker/patch/v0.5.12.post1", slime / "docker/patch/latest")
    series = declared(slime, "megatron.patch", "sglang.patch")
    given = ["--slime-root", str(slime), "--megatron-root", str(megatron), "--series", series, "--check"]
    code, out, err = run_patcher(*given, "--only", "slime-megatron-patch")
    assert code == 1 and any(
        "no SGLang is installed here or under --sglang-root, so slime's choice fell to latest/" in line for line in out
    ), out
    assert err == [
        "fix: pass --sglang-root the folder holding the sglang package the pairing installs, or run in the image"
    ]


TREE_PATCHES = [p for p in (*upstream.UPSTREAM, *PATCHES) if p.TARGET != "slime_root"]


@pytest.mark.parametrize("patch_", TREE_PATCHES, ids=lambda p: p.ID)
def test_every_patch_whose_tree_is_not_found_asks_for_that_tree(trees, patch_):
    """Sweep 10 U7: the rows said `pass --megatron-root`, and the one fix line `update the patch for this source
    shape`. Every patch of a tree beside slime's, with that tree neither given nor importable."""
    slime = trees[0]
    shutil.copytree(slime / "docker/patch/v0.5.12.post1", slime / "docker/patch/latest")
    option = "--" + patch_.TARGET.replace("_", "-")
    code, out, err = run_patcher("--slime-root", str(slime), "--only", patch_.ID, "--check")
    assert code == 1 and any(option in line for line in out), out
    assert err == [f"fix: pass {option} DIR (or run slime-patch in the image, where it is importable)"]


def test_two_trees_not_found_are_both_asked_for(trees):
    slime = trees[0]
    shutil.copytree(slime / "docker/patch/v0.5.12.post1", slime / "docker/patch/latest")
    code, _, err = run_patcher("--slime-root", str(slime), "--only", UPSTREAM, "--check")
    assert code == 1 and err == [
        "fix: pass --megatron-root DIR (or run slime-patch in the image, where it is importable); "
        "pass --sglang-root DIR (or run slime-patch in the image, where it is importable)"
    ]
