"""The metadata of sdist-built distributions as the verification build recorded it (planner/sdist_metadata.py): the
planner resolves a step with it instead of building the sdist, and a record that differs from the image is named."""

import json
import platform

import pytest
from conftest import ROOT

from tools.inputs.recipe import Recipe
from tools.planner import plan, sdist_metadata

pytestmark = pytest.mark.slow


def planned(tmp_path, monkeypatch, runs: list[str], records=None):
    monkeypatch.setattr(sdist_metadata, "FOLDER", records or tmp_path / "no-records")
    monkeypatch.setenv("PLAN_CACHE", str(ROOT / ".cache" / "plan-tests"))
    (tmp_path / "Dockerfile").write_text("FROM scratch\n" + "".join(f"RUN {r}\n" for r in runs))
    (tmp_path / "base.json").write_text(json.dumps({"image": "scratch", "partial": False, "distributions": []}))
    recipe = Recipe.load(tmp_path / "Dockerfile")
    planner = plan.Planner(recipe, manifest=tmp_path / "base.json", arch=platform.machine(), log=lambda *a, **k: None)
    return planner.run()


def record(folder, stem="slime_fixture_built-1.0", requires=("slime-fixture-dep<2",)):
    folder.mkdir(exist_ok=True)
    metadata = "Metadata-Version: 2.2\nName: slime-fixture-built\nVersion: 1.0\n"
    metadata += "".join(f"Requires-Dist: {r}\n" for r in requires)
    (folder / f"{stem}.METADATA").write_text(f"{sdist_metadata.TAG}cp312-cp312-linux_x86_64\n{metadata}")
    return folder, metadata


def test_an_sdist_the_planner_cannot_build_is_not_planned_without_a_record(tmp_path, monkeypatch, index):
    step = planned(tmp_path, monkeypatch, [f"pip install -i {index} slime-fixture-built==1.0"]).steps[0]
    assert not step.simulated and "cannot simulate" in step.note and "slime-fixture-dep" not in step.added


def test_with_the_build_s_record_the_step_resolves_as_the_build_did_without_building(tmp_path, monkeypatch, index):
    records, _ = record(tmp_path / "records")
    result = planned(tmp_path, monkeypatch, [f"pip install -i {index} slime-fixture-built==1.0"], records)
    step = result.steps[0]
    assert step.added == {"slime-fixture-built": "1.0", "slime-fixture-dep": "1.0"}  # the recorded bound, <2
    assert "with the metadata the verification build recorded: slime_fixture_built-1.0-cp312" in step.note


def test_a_changed_record_is_a_new_set_of_wheels(tmp_path):
    records, _ = record(tmp_path / "records")
    first = sdist_metadata.metadata_wheels(tmp_path / "cache", records)
    record(records, requires=("slime-fixture-dep",))
    assert sdist_metadata.metadata_wheels(tmp_path / "cache", records) != first


def test_the_image_s_metadata_is_compared_with_the_record(tmp_path):
    records, metadata = record(tmp_path / "records")
    site = tmp_path / "site-packages"
    assert sdist_metadata.compare(site, records) == {"slime_fixture_built-1.0": "not installed"}
    (site / "slime_fixture_built-1.0.dist-info").mkdir(parents=True)
    (site / "slime_fixture_built-1.0.dist-info" / "METADATA").write_text(metadata)
    assert sdist_metadata.compare(site, records) == {"slime_fixture_built-1.0": "as recorded"}
    (site / "slime_fixture_built-1.0.dist-info" / "METADATA").write_text(metadata + "Requires-Dist: torch\n")
    assert sdist_metadata.compare(site, records) == {"slime_fixture_built-1.0": "differs"}


def test_a_record_without_its_tag_line_is_refused(tmp_path):
    (tmp_path / "x-1.0.METADATA").write_text("Metadata-Version: 2.2\nName: x\nVersion: 1.0\n")
    with pytest.raises(ValueError, match="does not start with '# Tag: "):
        sdist_metadata.metadata_wheels(tmp_path / "cache", tmp_path)
