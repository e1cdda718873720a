"""A list of an image's distributions holds what an environment can (sweep 7 W4): base_manifest wrote a pip inspect
report listing numpy twice (NumPy 2.0.0 beside numpy 1.26.4), `../x y` and a version `not a version`; the plan then
failed naming a `.partial` folder under .cache (the name's `../` had reached its path), left there. The members: each
way an entry can be none (BAD), through each reader of such a list: base_manifest's --inspect and the planner's
load_manifest; and the planner's dist-info writer leaves nothing half made when it fails."""

from __future__ import annotations

import json

import pytest
from slime_image.errors import UserError

from tools.planner import base_manifest
from tools.planner.plan_env import Dist, FakeEnv, load_manifest

IMAGE = "nvcr.io/nvidia/cuda:13.0.2-devel-ubuntu24.04"
GOOD = [("numpy", "1.26.4"), ("six", "1.16.0")]
# Each bad entry (beside GOOD) and the words that name it.
BAD = {
    "a name twice as PEP 503 reads it": (("NumPy", "2.0.0"), "NumPy is listed twice (as 'numpy' too)"),
    "a name with a path": (("../x y", "1.0"), "'../x y' is no distribution name"),
    "a name with ESC": (("a\x1bb", "1.0"), "'a\\x1bb' is no distribution name"),
    "a name starting with a dash": (("-x", "1.0"), "'-x' is no distribution name"),
    "an empty name": (("", "1.0"), "'' is no distribution name"),
    "no PEP 440 version": (("wheel", "not a version"), "wheel 'not a version' is no PEP 440 version"),
    "a version with a newline": (("wheel", "1.0\nName: evil"), "wheel '1.0\\nName: evil' is no PEP 440 version"),
    "a version ending in a newline": (("pip", "24.0\n"), "pip '24.0\\n' is no PEP 440 version"),
    "a version after a tab": (("idna", "\t3.7"), "idna '\\t3.7' is no PEP 440 version"),
    "a version ending in a vertical tab": (("attrs", "23.2.0\x0b"), "attrs '23.2.0\\x0b' is no PEP 440 version"),
}


def inspect_report(tmp_path, entries) -> str:
    installed = [{"metadata": {"name": n, "version": v}} for n, v in entries]
    path = tmp_path / "inspect.json"
    path.write_text(json.dumps({"version": "1", "installed": installed, "environment": {"python_version": "3.12"}}))
    return str(path)


@pytest.mark.parametrize("bad", BAD)
def test_base_manifest_refuses_what_no_environment_holds_naming_it(bad, tmp_path, capsys):
    entry, said = BAD[bad]
    out = tmp_path / "manifest.json"
    report = inspect_report(tmp_path, [*GOOD, entry])
    code = base_manifest.main(["--image", IMAGE, "--inspect", report, "--out", str(out)])
    err = capsys.readouterr().err
    assert code != 0 and said in err and len(err.strip().splitlines()) == 2 and "Traceback" not in err, err
    assert not out.exists()


def test_base_manifest_names_every_bad_entry_at_once(tmp_path, capsys):
    report = inspect_report(tmp_path, [*GOOD, *(entry for entry, _ in BAD.values())])
    assert base_manifest.main(["--image", IMAGE, "--inspect", report, "--out", str(tmp_path / "m.json")]) != 0
    err = capsys.readouterr().err
    assert all(said in err for _, said in BAD.values()), err


@pytest.mark.parametrize("bad", BAD)
def test_the_planner_refuses_a_manifest_written_by_hand_so(bad, tmp_path):
    entry, said = BAD[bad]
    path = tmp_path / "manifest.json"
    dists = [{"name": n, "version": v, "requires": []} for n, v in [*GOOD, entry]]
    path.write_text(json.dumps({"image": IMAGE, "distributions": dists}))
    with pytest.raises(UserError) as refused:
        load_manifest(path)
    assert said in refused.value.cause and str(path) in refused.value.cause


def test_a_dist_info_the_planner_cannot_write_leaves_nothing_half_made(tmp_path):
    site = tmp_path / "env" / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    env = FakeEnv(tmp_path / "env")
    env.add(Dist("six", "1.16.0"))
    with pytest.raises(OSError):
        env.add(Dist("x/y", "1.0"))  # a name that is a path: no folder of that name can be made in site-packages
    assert sorted(p.name for p in site.iterdir()) == ["six-1.16.0.dist-info"]


def test_a_key_given_twice_in_an_entry_is_refused_by_each_reader(tmp_path, capsys):
    """Sweep 7 W4: `"version"` twice in one metadata object was read as its last value, the first unsaid."""
    twice = '{"name": "numpy", "version": "1.26.4", "version": "2.0.0"}'
    report = tmp_path / "inspect.json"
    report.write_text(f'{{"version": "1", "installed": [{{"metadata": {twice}}}], "environment": {{}}}}')
    out = tmp_path / "m.json"
    assert base_manifest.main(["--image", IMAGE, "--inspect", str(report), "--out", str(out)]) != 0
    err = capsys.readouterr().err
    assert "'version' is given twice" in err and len(err.strip().splitlines()) == 2 and not out.exists(), err
    manifest = tmp_path / "manifest.json"
    manifest.write_text(f'{{"image": "{IMAGE}", "distributions": [{twice[:-1]}, "requires": []}}]}}')
    with pytest.raises(UserError) as refused:
        load_manifest(manifest)
    assert "'version' is given twice" in refused.value.cause and str(manifest) in refused.value.cause
