"""The verification build's record (docs/build/, written by `make build-check`): it describes the tree as it is,
the build reached its last step, the image holds exactly the lock, and the gate passed but for the stand-ins named.

CI does not build; these tests hold the committed record to the tree, so it cannot go stale silently."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from tools.inputs import fingerprint, pairings
from tools.inputs.lock import locked
from tools.planner import sdist_metadata
from tools.release.build_check import image_weight, record, sbom_check, slime_tests, standins

RECORD = record.RECORD_JSON


# docs/build/<pairing>/ holds each pairing's record, whichever is the default; every pairing has one.
RECORDS = [record.folder_for(pairings.load(name)) for name in pairings.names()]


@pytest.fixture(scope="module", params=RECORDS, ids=lambda d: d.name)
def built(request):
    folder = request.param
    if not (folder / RECORD).exists():
        pytest.fail(f"no verification-build record at {folder / RECORD}: run make build-check PAIRING={folder.name}")
    return {**json.loads((folder / RECORD).read_text()), "folder": folder}


def test_the_record_was_made_from_the_inputs_in_this_tree_for_its_pairing(built):
    expected = built["folder"].name
    assert built["pairing"] == expected, (
        f"{built['folder']} records {expected}: run make build-check PAIRING={expected}"
    )
    current = fingerprint.pairing_inputs(pairings.load(expected))
    stale = {name: digest for name, digest in current.items() if built["inputs"].get(name) != digest}
    assert not stale, f"these inputs changed since the verification build: {sorted(stale)}; run make build-check"


def test_a_changed_input_changes_its_digest(tmp_path):
    lock = pairings.default().lock.relative_to(ROOT).as_posix()
    (tmp_path / "locks").mkdir()
    for name in (*fingerprint.INPUTS, lock):
        source = ROOT / name
        if source.is_dir():
            (tmp_path / name).mkdir()
            (tmp_path / name / "a.py").write_text("x = 1\n")
        else:
            (tmp_path / name).write_text(source.read_text())
    before = fingerprint.input_digests(lock, root=tmp_path)
    (tmp_path / "image" / "a.py").write_text("x = 2\n")
    (tmp_path / lock).write_text("numpy==1.26.4\n")
    after = fingerprint.input_digests(lock, root=tmp_path)
    assert {n for n in before if before[n] != after[n]} == {"image", lock}


def test_the_recorded_metadata_of_sdist_built_distributions_is_what_the_image_holds(built):
    """The planner resolves with locks/sdist-metadata/ instead of building those sdists: the build holds it true."""
    assert built.get("sdist_metadata", {}) == dict.fromkeys(sdist_metadata.records(), "as recorded")


def test_the_build_reached_its_last_step_through_the_gate(built):
    assert built["exit_code"] == 0 and built["outcome"] == "built through the smoke gate"
    assert built["steps"] and built["steps"][-1]["instruction"].startswith("WORKDIR")
    assert any("slime-smoke --stage build" in s["instruction"] for s in built["steps"])


def test_the_image_holds_exactly_the_lock_and_the_plan(built):
    for against in ("lock", "plan"):
        compared = built[against]
        assert compared["differences"] == 0, (against, compared)
        assert compared["pins"] > 200
    editable = " ".join(built["lock"]["editable"])
    assert "megatron-core" in editable and "slime" in editable


def test_no_gate_check_fails_and_only_the_named_stand_ins_are_excused(built):
    gate = built["gate"]
    assert gate["ok"], gate
    expected = {check for c in built["standins"]["components"] for check in c["checks"]}
    assert expected == {check for _, _, checks, _ in standins.COMPONENTS for check in checks}
    for check in gate["checks"]:
        if check["id"] in expected:
            assert check["status"] == "stand-in", check
        elif check["status"] == "skip":  # image-inputs compares only where the preflight asks it to
            assert check["summary"].startswith("needs a GPU") or check["id"] == "image-inputs", check
        else:  # a warning is a report that fails nothing (left-out-components names what upstream has besides)
            assert check["status"] in ("pass", "warn"), check


def test_the_record_lists_how_the_base_differs_and_what_it_weighs(built):
    assert built["standins"]["base"] == list(standins.BASE_DIFFERENCES)
    assert built["sizes"]["image_gb"] > built["sizes"]["venv_gb"] > 1
    assert built["engine"].startswith("buildah version")


def test_the_record_weighs_every_layer_and_names_the_largest(built):
    assert len(built["layers"]) > 10
    assert built["sizes"]["largest_layer_gb"] == max(layer["gb"] for layer in built["layers"])


def test_no_layer_of_the_built_image_is_over_the_limit(built):
    heavy = [layer for layer in built["layers"] if layer["gb"] > image_weight.LAYER_LIMIT_GB]
    assert not heavy, f"layers over {image_weight.LAYER_LIMIT_GB} GB: {heavy}; split the step that makes them"


def _image(*made: tuple[str, bool]) -> dict:
    """buildah inspect's JSON, as much of it as layer_table reads: history entries, and a diff_id per layer made."""
    history = [{"created_by": by, **({"empty_layer": True} if empty else {})} for by, empty in made]
    ids = [f"sha256:{i:064x}" for i, (_, empty) in enumerate(made) if not empty]
    return {"Docker": {"history": history, "rootfs": {"type": "layers", "diff_ids": ids}}}


def test_each_layer_is_weighed_by_the_instruction_that_made_it():
    image = _image(("/bin/sh", False), ("ENV A=1", True), ("/bin/bash -o pipefail -c pip install  torch", False))
    storage = [
        {"id": "top", "diff-digest": image["Docker"]["rootfs"]["diff_ids"][1], "diff-size": 6_000_000_000},
        {"id": "base", "diff-digest": image["Docker"]["rootfs"]["diff_ids"][0], "diff-size": 3_000_000_000},
        {"id": "unfinished"},
    ]
    table = image_weight.layer_table(image, storage)
    assert table == [
        {"instruction": "/bin/sh", "bytes": 3_000_000_000},
        {"instruction": "/bin/bash -o pipefail -c pip install torch", "bytes": 6_000_000_000},
    ]
    assert image_weight.largest(table)["bytes"] == 6_000_000_000


def test_a_distribution_weighs_what_its_record_lists():
    import packaging

    site_packages = Path(packaging.__file__).parent.parent
    found = {d["name"]: d["bytes"] for d in image_weight.distribution_sizes(site_packages)}
    on_disk = sum(p.stat().st_size for p in Path(packaging.__file__).parent.rglob("*.py"))
    assert on_disk <= found["packaging"] < on_disk * 3  # with the bytecode pip compiled, which RECORD lists


def test_a_library_that_is_a_link_to_the_bases_copy_weighs_nothing(tmp_path):
    """cuda_once.py (W46) leaves the wheel's RECORD as pip wrote it and the file a link: the layer holds no bytes."""
    lib = tmp_path / "nvidia" / "cu13" / "lib"
    lib.mkdir(parents=True)
    (tmp_path / "libcublas.so.13.1.0.3").write_bytes(b"x" * 1000)
    (lib / "libcublas.so.13").symlink_to(tmp_path / "libcublas.so.13.1.0.3")
    (lib / "libcublasLt.so.13").write_bytes(b"y" * 300)
    info = tmp_path / "nvidia_cublas-13.1.0.3.dist-info"
    info.mkdir()
    (info / "RECORD").write_text(
        "nvidia/cu13/lib/libcublas.so.13,sha256=a,1000\nnvidia/cu13/lib/libcublasLt.so.13,sha256=b,300\n"
    )
    assert image_weight.distribution_sizes(tmp_path) == [{"name": "nvidia_cublas", "version": "13.1.0.3", "bytes": 300}]


@pytest.mark.parametrize(
    "created_by, shown",
    [
        (
            "|2 BASE_IMAGE=localhost/cuda-standin:13.0 EFA_INSTALLER_URL=file:///mirrors/efa /bin/bash -o pipefail -c "
            "pip install  setuptools",
            "/bin/bash -o pipefail -c pip install setuptools",
        ),
        ("/bin/sh -c #(nop) COPY dir:b13c in /opt/slime-image/", "COPY dir:b13c in /opt/slime-image/"),
        (
            "|1 PAIRING=v0.3.1 /bin/sh -c --mount=type=cache,target=/root/.cache/pip,sharing=locked pip install six",
            "/bin/sh -c pip install six",
        ),
        ("/bin/sh", "/bin/sh"),
    ],
)
def test_a_layer_is_named_by_its_command_without_the_build_arguments(created_by, shown):
    assert image_weight.instruction(created_by) == shown


def test_history_that_does_not_match_the_layers_is_refused():
    image = _image(("/bin/sh", False))
    image["Docker"]["rootfs"]["diff_ids"].append("sha256:" + "f" * 64)
    with pytest.raises(ValueError, match="1 history entries made layers, but the image has 2"):
        image_weight.layer_table(image, [])


def test_the_readable_record_is_the_json_one(built):
    as_written = {k: v for k, v in built.items() if k != "folder"}
    assert (built["folder"] / "README.md").read_text() == record.markdown(as_written)


@pytest.mark.parametrize(
    "args, cause",
    [
        (
            ["--megatron-repo", "/nonexistent/Megatron-LM"],
            "build-check: --megatron-repo /nonexistent/Megatron-LM is not",
        ),
        (["--out", "/dev/null/record"], "build-check: --out /dev/null/record/record.json: cannot write a file there"),
    ],
)
def test_bad_input_stops_before_any_work_with_cause_and_fix(args, cause, tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "tools.release.build_check.run", "--work", str(tmp_path / "work"), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    lines = run.stderr.strip().splitlines()
    assert run.returncode != 0 and "Traceback" not in run.stderr
    assert lines[0].startswith(cause) and lines[1].startswith("fix: ")
    assert not (tmp_path / "work").exists()


# docs/rebuilds/<change>/: the verification build run again on the cached layers of the default pairing's, after a
# one-line change of the kind named, to show what that change rebuilds. Its inputs differ from the tree by design.
REBUILDS = ROOT / "docs" / "rebuilds"
IMAGE_REBUILD_LIMIT_S = 180


def _rebuilt(change: str) -> dict:
    path = REBUILDS / change / RECORD
    if not path.is_file():
        pytest.fail(f"no record at {path}: make the change, run build-check with --out {path.parent}, undo it")
    built = json.loads(path.read_text())
    assert built["exit_code"] == 0 and built["lock"]["differences"] == 0 and built["plan"]["differences"] == 0
    return built


def _first_rebuilt(steps: list[dict]) -> int:
    """The index of the first step a rebuild ran again (FROM is never reported as cached)."""
    return next(i for i, s in enumerate(steps) if i and not s["cached"])


def test_a_requirements_change_that_moves_no_stack_pin_leaves_the_stack_layers_cached():
    steps = _rebuilt("requirements")["steps"]
    first = _first_rebuilt(steps)
    assert steps[first]["instruction"].startswith("COPY requirements.txt")
    stack = [s for s in steps[:first] if "pip install" in s["instruction"]]
    assert len(stack) >= 5 and all(s["cached"] for s in stack), [s["instruction"][:60] for s in stack]


def test_an_image_change_rebuilds_in_three_minutes_gate_included():
    built = _rebuilt("image")
    assert built["steps"][_first_rebuilt(built["steps"])]["instruction"].startswith("COPY image/")
    assert any("slime-smoke --stage build" in s["instruction"] and not s["cached"] for s in built["steps"])
    assert built["seconds"] <= IMAGE_REBUILD_LIMIT_S


def _tests_result(stack: dict[str, list[str]], passed: int = 3) -> dict:
    files = {
        file: {"passed": passed, "failed": len(entries), "errors": 0, "skipped": 0, "outside_ci": [], "stack": entries}
        for file, entries in stack.items()
    }
    total = sum(len(e) for e in stack.values())
    return {
        "passed": passed * len(files),
        "failed": total,
        "errors": 0,
        "skipped": 0,
        "stack_failures": total,
        "outside_ci_failures": 0,
        "files": files,
        "left_out": [],
    }


def test_a_failure_the_pairing_does_not_list_is_the_stack_s_and_a_listed_one_that_passes_is_named():
    result = _tests_result(
        {
            "tests/test_a.py": ["test_sdk: TypeError: wants httpx2", "test_new: AssertionError: numpy 2"],
            "tests/b.py": [],
        }
    )
    known = {"tests/test_a.py::test_sdk": "the test's own client, reviewed", "tests/b.py::test_fixed": "fixed since"}
    judged = slime_tests.with_known(result, known)
    assert judged["stack_failures"] == 1 and judged["files"]["tests/test_a.py"]["stack"] == [
        "test_new: AssertionError: numpy 2"
    ]
    assert judged["known_failures"] == 1 and judged["stale_known"] == ["tests/b.py::test_fixed"]
    assert judged["files"]["tests/test_a.py"]["known"] == [
        {"failure": "test_sdk: TypeError: wants httpx2", "why": "the test's own client, reviewed"}
    ]
    lines = "\n".join(record.unit_test_lines(judged, "v0.3.0"))
    assert "**1 failures of the stack**" in lines and "known, reviewed: test_sdk: the test's own client" in lines
    assert "listed but no longer failing, so the check fails: tests/b.py::test_fixed" in lines
    assert "pairings/v0.3.0.toml, [known_test_failures]" in lines
    clean = slime_tests.with_known(_tests_result({"tests/test_a.py": ["test_sdk: TypeError"]}), known)
    assert clean["stack_failures"] == 0 and clean["stale_known"] == ["tests/b.py::test_fixed"]
    nothing = slime_tests.with_known(_tests_result({"tests/test_a.py": []}), {})
    assert "[known_test_failures]" not in "\n".join(record.unit_test_lines(nothing, "v0.3.1"))


def test_each_pairing_s_known_failures_are_failures_its_record_shows_and_nothing_else_fails(built):
    """The reviewed list and the last verification build agree: every listed test failed there, and no other did."""
    raw = {
        file: {**counts, "stack": counts["stack"] + [k["failure"] for k in counts.get("known", [])]}
        for file, counts in built["slime_unit_tests"]["files"].items()
    }
    known = pairings.load(built["pairing"]).known_test_failures
    judged = slime_tests.with_known({**built["slime_unit_tests"], "files": raw}, known)
    assert (judged["stack_failures"], judged["stale_known"]) == (0, [])


# Issue 45: the record names the base by digest, holds the image's SBOM, and the SBOM covers every lock pin by a hash
# the lock holds.


def test_the_record_names_the_base_by_digest(built):
    base = record.base_of(built)
    assert "@sha256:" in base, f"{built['folder'].name} was built on {base}, a tag: run make build-check again"


def test_the_sbom_is_valid_and_covers_every_pin_of_the_lock_by_a_hash_the_lock_holds(built):
    text = (built["folder"] / record.SBOM).read_text()
    assert sbom_check.invalid(text) is None
    components = {c["purl"]: c for c in json.loads(text)["components"]}
    pairing = pairings.load(built["folder"].name)
    # The SLIME router is a stand-in here (PyPI's wheel renamed, standins.py): its bytes are not the lock's.
    stand_ins = {"sglang-router"}
    uncovered = []
    for name, pin in locked(pairing)[pairing.lock].pins.items():
        component = components.get(f"pkg:pypi/{name}@{pin.version}")
        digests = {h["content"] for h in (component or {}).get("hashes", []) if h["alg"] == "SHA-256"}
        if name not in stand_ins and not digests & set(pin.hashes):
            uncovered.append(f"{name} {pin.version}")
    assert not uncovered, f"SBOM components without a hash the lock holds: {uncovered}"
    scan = built["sbom"]["scan"]
    assert scan["found"] > 200 and not scan["missing_from_sbom"] and not scan["other_version"], scan
