"""Every figure a page quotes from a record is generated from it (issue 46): docs/building.md's weights from the
verification build's records, its times from the rebuilds' records and tools/docs.py, the README's suite time from the
one place the current table of docs/benchmarks.md takes it; docs/building.md said 16.7 GB while the record said 13.2,
and the README said both 11 minutes and 4 min 27 s while the table said 4 min 45 s."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from conftest import ROOT

from tools import docs
from tools.inputs import pairings
from tools.release.build_check import record

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
GENERATED = re.compile(r"<!-- ([\w-]+):begin.*?<!-- \1:end -->", re.DOTALL)


def by_hand(page) -> str:
    """A page's text outside its generated blocks."""
    return GENERATED.sub("", page.read_text())


def test_the_readme_gives_the_suite_the_time_the_current_table_gives_it():
    readme = re.findall(r"(\d+ min \d+ s|about \d+ minutes)", (ROOT / "README.md").read_text())
    table = (ROOT / "docs" / "benchmarks.md").read_text()
    current = re.search(r"^\| `make test` on a fresh clone[^|]*\| (\d+ min \d+ s)", table, re.MULTILINE)[1]
    assert set(readme) == {current}, readme


def records() -> list[dict]:
    paths = [record.folder_for(pairings.load(name)) / record.RECORD_JSON for name in pairings.names()]
    return [json.loads(path.read_text()) for path in paths if path.is_file()]


@pytest.mark.parametrize("page", [p for p in PAGES if p.name != "benchmarks.md"], ids=lambda p: p.name)
def test_no_page_quotes_a_records_weight_by_hand(page):
    """benchmarks.md is left out: its sections are dated accounts of each measurement, its current figures generated."""
    weights = {f"{gb} GB" for built in records() for gb in built["sizes"].values()}
    weights |= {f"{gb} GB" for built in records() for gb in built["compressed_above_base_gb"].values()}
    text = by_hand(page)
    assert [w for w in weights if re.search(rf"(?<![\d.]){re.escape(w)}", text)] == []


def test_buildings_figures_follow_the_record(tmp_path, monkeypatch):
    """A new record changes the figures docs/building.md gives, through `make docs`, and no hand."""
    monkeypatch.setattr(record, "RECORD_DIR", tmp_path / "build")
    shutil.copytree(ROOT / "docs" / "rebuilds", tmp_path / "rebuilds")
    for name in pairings.names():
        built = json.loads((ROOT / "docs" / "build" / name / record.RECORD_JSON).read_text())
        built["sizes"] |= {"image_gb": 21.5, "venv_gb": 17.25}
        built["layers"].append({"instruction": "/bin/sh -c pip install torch && true", "gb": 4.75})
        built["sizes"]["largest_layer_gb"] = 4.75
        (tmp_path / "build" / name).mkdir(parents=True)
        (tmp_path / "build" / name / record.RECORD_JSON).write_text(json.dumps(built))
    [text] = docs.build_figures(ROOT / "slime.Dockerfile")
    for name in pairings.names():
        assert (
            f"{name} uncached {docs.UNCACHED_SECONDS[name]} s, image 21.5 GB uncompressed, /opt/venv 17.25 GB, its "
            "largest layer 4.75 GB (`pip install torch`)" in text
        )
    assert "an image/ change rebuilds in 22 s" in text


def test_buildings_figures_name_a_pairing_without_a_record(tmp_path, monkeypatch):
    monkeypatch.setattr(record, "RECORD_DIR", tmp_path / "build")
    [text] = docs.build_figures(ROOT / "slime.Dockerfile")
    assert all(f"{name} not recorded (`make build-check PAIRING={name}`)" in text for name in pairings.names())
    assert text.endswith(f"`make build-check PAIRING={pairings.names()[-1]}`).")
