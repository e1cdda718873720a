"""The planner's index (tools/planner/plan_index.py) in front of a real local index (tests/local_index.py): pip resolves
through it exactly as it resolves against the index itself, a lock narrows the pages to what pip could take anyway,
every wheel gets the metadata its own METADATA file holds, and an index that cannot be reached is said to be so."""

import hashlib
import http.server
import json
import socket
import struct
import threading
import urllib.request
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT, recorded
from packaging.specifiers import SpecifierSet
from silent_servers import mute
from slime_image.errors import UserError

from tools.planner import index_http
from tools.planner.plan_env import FakeEnv
from tools.planner.plan_index import JSON_PAGE, Pin, PlanIndex, project_files


def page(index: PlanIndex, name: str) -> list[str]:
    answer = index_http.get(f"{index.url}{name}/", {"Accept": JSON_PAGE})
    assert answer.status == 200
    return [f["filename"] for f in json.loads(answer.body)["files"]]


def test_a_lock_narrows_a_page_to_the_files_of_its_pin(index, tmp_path):
    with PlanIndex(index, tmp_path / "store", "x86_64", {"slime-fixture": "1.0"}) as ours:
        assert page(ours, "slime-fixture") == ["slime_fixture-1.0-py3-none-any.whl"]
        assert page(ours, "slime-fixture-dep") == [
            "slime_fixture_dep-1.0-py3-none-any.whl",
            "slime_fixture_dep-2.0-py3-none-any.whl",
        ]


# A project's files for every Python and platform, as a real page lists them (numpy's, torch's): what pip could take
# for CPython 3.12 on Linux x86_64, and what it could not.
TAKEN = [
    "multi-1.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
    "multi-1.0-cp312-cp312-musllinux_1_2_x86_64.whl",
    "multi-1.0-cp39-abi3-manylinux_2_28_x86_64.whl",
    "multi-1.0-py2.py3-none-any.whl",
    "multi-1.0-py312-none-linux_x86_64.whl",
]
LEFT = [
    "multi-1.0-cp311-cp311-manylinux_2_17_x86_64.whl",
    "multi-1.0-cp313-cp313-manylinux_2_17_x86_64.whl",
    "multi-1.0-cp312-cp312-manylinux_2_17_aarch64.whl",
    "multi-1.0-cp312-cp312-win_amd64.whl",
    "multi-1.0-cp312-cp312-macosx_11_0_x86_64.whl",
    "multi-1.0-pp310-pypy310_pp73-manylinux_2_17_x86_64.whl",
    "multi-1.0-py2-none-any.whl",
]


def test_a_page_lists_the_wheels_pip_could_take_here_every_sdist_and_what_it_cannot_read(tmp_path):
    """pip parsed and judged every file of a page at every step; the planner's index leaves out the wheels pip could
    never take here, and no other: each it leaves out has no tag of those packaging gives CPython 3.12 on Linux x86_64
    (pip's own list); an sdist and a name packaging cannot read reach pip, which judges them."""
    from packaging.tags import compatible_tags, cpython_tags
    from packaging.utils import parse_wheel_filename

    platforms = [f"manylinux_2_{n}_x86_64" for n in range(39, 16, -1)] + ["manylinux2014_x86_64", "linux_x86_64"]
    platforms += [f"musllinux_1_{n}_x86_64" for n in range(2, -1, -1)]
    pips = {*cpython_tags((3, 12), ["cp312"], platforms), *compatible_tags((3, 12), "cp312", platforms)}
    for name in TAKEN:
        assert parse_wheel_filename(name)[3] & pips, name
    for name in LEFT:
        assert not parse_wheel_filename(name)[3] & pips, name
    unread = "multi-1.0-not-a-wheel-name.whl"
    files = [*LEFT, *TAKEN, "multi-1.0.tar.gz", unread]
    entries = [{"filename": f, "url": f, "hashes": {}} for f in files]
    body = json.dumps({"meta": {"api-version": "1.0"}, "name": "multi", "files": entries}).encode()

    class Json(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", JSON_PAGE)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Json)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with PlanIndex(f"http://127.0.0.1:{server.server_address[1]}/simple", tmp_path / "store", "x86_64") as ours:
            assert page(ours, "multi") == [*TAKEN, "multi-1.0.tar.gz", unread]
    finally:
        server.shutdown()


@pytest.mark.parametrize(
    "pin",
    ["1.0", "1.0.0", "2.11.0", "2.11.0+cu130", "1!1.0", "0.5.15.post1", "1.0rc1", "2026.10.1"],
)
def test_a_pin_allows_exactly_what_pip_s_specifier_allows(pin):
    versions = [
        "1.0",
        "1.0.0",
        "1",
        "01.0",
        "v1.0",
        "1.0.post1",
        "1.0rc1",
        "10.0",
        "1!1.0",
        "2.11.0",
        "2.11",
        "2.11.0+cu130",
        "2.11.0+cpu",
        "0.5.15.post1",
        "0.5.15",
        "2026.10.1",
        "not-a-version",
    ]
    ours = Pin(pin)
    for version in versions:
        expected = version == "not-a-version" or SpecifierSet(f"=={pin}").contains(version, prereleases=True)
        assert ours.allows(f"x-{version}.tar.gz") == expected, version


def test_wheels_get_the_metadata_their_own_file_holds_kept_by_digest(index, tmp_path):
    with PlanIndex(index, tmp_path / "store", "x86_64") as ours:
        answer = index_http.get(f"{ours.url}slime-fixture/", {"Accept": JSON_PAGE})
        entry = json.loads(answer.body)["files"][0]
        assert entry["core-metadata"] is True and entry["url"].startswith("http://127.0.0.1")
        served = index_http.get(entry["url"] + ".metadata").body
        real = ours.real_url(entry["url"])
        assert real.startswith(index.removesuffix("/simple")) and real.endswith(entry["filename"])
        wheel = urllib.request.urlopen(real).read()
        (tmp_path / "w.whl").write_bytes(wheel)
        with zipfile.ZipFile(tmp_path / "w.whl") as archive:
            assert served == archive.read("slime_fixture-1.0.dist-info/METADATA")
        assert ours.tags[real] == ["py3-none-any"]
        digest = hashlib.sha256(wheel).hexdigest()
        assert (tmp_path / "store" / f"{digest}.METADATA").read_bytes() == served


def test_pip_resolves_through_it_as_it_resolves_against_the_index(index, tmp_path):
    env = FakeEnv(ROOT / ".cache" / "plan-tests" / "env-py312-x86_64")
    with env.running():
        env.create()
        resolved_both_ways(env, index, tmp_path)


def resolved_both_ways(env: FakeEnv, index: str, tmp_path) -> None:
    lock = tmp_path / "lock.txt"
    lock.write_text("slime-fixture==1.0\nslime-fixture-dep==1.0\n")

    def resolve(index_url: str) -> list[tuple[str, str, str]]:
        report = tmp_path / "report.json"
        proc = env.pip(
            "install",
            "--dry-run",
            "--quiet",
            "--report",
            str(report),
            "--index-url",
            index_url,
            "--no-cache-dir",
            "-c",
            str(lock),
            "slime-fixture",
        )
        assert proc.returncode == 0, proc.stderr
        items = json.loads(report.read_text())["install"]
        return sorted(
            (i["metadata"]["name"], i["metadata"]["version"], ours.real_url(i["download_info"]["url"])) for i in items
        )

    with PlanIndex(index, tmp_path / "store", "x86_64", {"slime-fixture": "1.0", "slime-fixture-dep": "1.0"}) as ours:
        direct, through = resolve(index), resolve(ours.url)
    assert through == direct
    assert [name for name, _, _ in through] == ["slime-fixture", "slime-fixture-dep"]


def test_an_index_that_cannot_be_reached_is_named_as_such(tmp_path):
    with PlanIndex("http://127.0.0.1:9/simple", tmp_path / "store", "x86_64") as ours:
        answer = index_http.get(f"{ours.url}six/", {"Accept": JSON_PAGE})
        assert answer.status == 502
        assert ours.errors and "127.0.0.1:9" in ours.errors[0]


def within(seconds: float, call):
    """What `call()` returned or raised, or a failure once `seconds` passed without its end."""
    ended = []

    def run():
        try:
            ended.append(("returned", call()))
        except BaseException as exc:  # handed to the test, which names it
            ended.append(("raised", exc))

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=seconds)
    assert ended, f"still waiting after {seconds} s"
    return ended[0]


def test_an_index_that_takes_the_connection_and_never_answers_is_named_within_the_timeout(tmp_path, monkeypatch):
    """Sweep 3 row 11: PIP_INDEX_URL at a server that never answers kept make plan silent (60 s a read, three tries
    each); each read now waits index_http.TIMEOUT (lowered here), once, and the error names the URL and the fix. Read
    by the planner's own index, which pip asks, and by the commands that read a project's page themselves."""
    monkeypatch.setattr(index_http, "TIMEOUT", 1.0, raising=False)
    with mute() as upstream:
        how, exc = within(15, lambda: index_http.get(f"{upstream}/simple/six/"))
        assert how == "raised" and isinstance(exc, index_http.Unreachable), exc
        assert str(exc) == f"{upstream}/simple/six/: no answer in 1 s"
        how, exc = within(15, lambda: project_files(f"{upstream}/simple", "six", "its hashes"))
        assert how == "raised" and isinstance(exc, UserError), exc
        assert f"{upstream}/simple/six/: no answer in 1 s" in exc.cause and "PIP_INDEX_URL" in exc.fix
        with PlanIndex(f"{upstream}/simple", tmp_path / "store", "x86_64") as ours:
            how, exc = within(15, lambda: urllib.request.urlopen(f"{ours.url}six/", timeout=15))  # as pip asks it
            assert how == "raised" and getattr(exc, "code", None) == 502, exc
            assert ours.errors == [f"{upstream}/simple/six/: no answer in 1 s"]


def test_a_cold_plan_names_an_index_that_never_answers_within_the_timeout(tmp_path, monkeypatch, capsys):
    """Sweep 4 row 21: with no planner cache, make plan first set up its pip, which the host's pip downloaded from the
    index with its own retries and timeouts: silent for 300 s at a server that never answers. The set-up now asks the
    index first, waiting index_http.TIMEOUT (fetch.py's figure; lowered here) once, and the plan ends in two lines
    naming the index."""
    from tools.planner import plan

    monkeypatch.setattr(index_http, "TIMEOUT", 1.0, raising=False)
    monkeypatch.setenv("PLAN_CACHE", str(tmp_path / "cold"))
    with mute() as upstream:
        monkeypatch.setenv("PIP_INDEX_URL", f"{upstream}/simple")
        how, code = within(20, lambda: plan.main([]))
    assert how == "returned" and code == 2, code
    said = capsys.readouterr().err.strip().splitlines()
    assert said[-2] == (
        f"plan: cannot reach the package index {upstream}/simple (setting up the planner: {upstream}/simple/pip/: "
        "no answer in 1 s)"
    ), said
    assert said[-1].startswith("fix: check the network or PIP_INDEX_URL"), said


def test_an_html_index_is_handed_to_pip_as_it_is(tmp_path):
    (tmp_path / "simple" / "six").mkdir(parents=True)
    (tmp_path / "simple" / "six" / "index.html").write_text("<html><body></body></html>\n")

    class Html(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(tmp_path), **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Html)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    upstream = f"http://127.0.0.1:{server.server_address[1]}/simple"
    try:
        with PlanIndex(upstream, tmp_path / "store", "x86_64") as ours:
            page_url = f"{ours.url}six/"
            with urllib.request.urlopen(urllib.request.Request(page_url, headers={"Accept": JSON_PAGE})) as answer:
                assert answer.url == f"{upstream}/six/"
                assert answer.headers.get_content_type() == "text/html"
    finally:
        server.shutdown()


def test_cached_resolutions_are_keyed_by_the_index_the_build_declares_not_the_hosts_pip_config(tmp_path, monkeypatch):
    from tools.planner.plan_replay import index_settings

    config = tmp_path / "pip.conf"
    config.write_text("[global]\nindex-url = http://127.0.0.1:1/simple\n")
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", str(config))
    before = index_settings()
    config.write_text("[global]\nindex-url = http://127.0.0.1:2/simple\n")
    monkeypatch.setenv("PIP_CONSTRAINT", str(config))
    assert index_settings() == before  # the host's pip configuration is no input of the plan
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:3/simple")  # a build argument of the Dockerfile
    assert index_settings() != before


def test_pip_gone_before_its_answer_is_no_traceback(index, tmp_path, capfd):
    """Ctrl-C stops pip with the planner: the index's answer then meets a closed connection, and the server printed
    its traceback over the plan's two lines (issue 46; benchmarks/plan_sigint_sweep.py found it)."""
    with PlanIndex(index, tmp_path / "store", "x86_64") as ours:
        port = ours.server.server_address[1]
        for _ in range(20):
            client = socket.create_connection(("127.0.0.1", port))
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # closed by a reset
            client.sendall(b"GET /simple/slime-fixture/ HTTP/1.1\r\nHost: here\r\n\r\n")
            client.close()
        page(ours, "slime-fixture")  # still answers; the connections before it are done
    assert "Traceback" not in capfd.readouterr().err


def test_a_plan_that_reads_the_index_refuses_a_lock_hash_the_index_lists_for_no_file_of_its_pin(
    index, tmp_path, monkeypatch
):
    """The plan reads the index's pages anyway (its own index in front of it): each hash of every lock the recipe
    installs under, for a pin whose page it read, must be one of that version's files (W50). The right lock plans."""
    import platform

    from slime_image.errors import UserError
    from slime_image.lock_file import Pin as LockPin
    from slime_image.lock_file import pin_text

    from tools.inputs.recipe import Recipe
    from tools.planner import plan, sdist_metadata
    from tools.planner.lock_hashes import version_listings

    cache = ROOT / ".cache" / "plan-tests"
    env = FakeEnv(cache / f"env-py312-{platform.machine()}")
    with env.running():
        env.create()  # with the host's index, before the plan is pointed at the local one
    monkeypatch.setenv("PLAN_CACHE", str(cache))
    monkeypatch.setenv("PIP_INDEX_URL", index)
    monkeypatch.setattr(sdist_metadata, "FOLDER", tmp_path / "no-records")
    (tmp_path / "Dockerfile").write_text(
        "FROM scratch\nCOPY c.lock /opt/c.lock\nENV PIP_CONSTRAINT=/opt/c.lock\nRUN pip install slime-fixture\n"
    )
    (tmp_path / "base.json").write_text(json.dumps({"image": "scratch", "partial": False, "distributions": []}))

    def lock(dep_hashed_as: str) -> str:
        found = {v: version_listings("slime-fixture-dep", {v}, "", index + "/")[v].installable for v in ("1.0", "2.0")}
        fixture = version_listings("slime-fixture", {"1.0"}, "", index + "/")["1.0"].installable
        pins = [LockPin("slime-fixture", "1.0", fixture), LockPin("slime-fixture-dep", "2.0", found[dep_hashed_as])]
        # The cutoff line every lock holds (lock.held_cutoff); the planned cutoff is each call's own.
        return recorded("# uploaded-prior-to: 2026-12-01T00:00:00Z\n" + "\n".join(map(pin_text, pins)) + "\n")

    def planned(cutoff: str):
        recipe = Recipe.load(tmp_path / "Dockerfile")
        options = {"manifest": tmp_path / "base.json", "arch": platform.machine(), "cutoff": cutoff}
        return plan.Planner(recipe, log=lambda *a, **k: None, **options).run()

    (tmp_path / "c.lock").write_text(lock("1.0"))  # the hash of dep 1.0's wheel under the pin of 2.0
    with pytest.raises(UserError) as caught:
        planned("2026-12-01T00:00:01Z")  # a cutoff of its own: no cached resolution, the index is read
    assert caught.value.cause.startswith(f"{tmp_path / 'c.lock'}:5: slime-fixture-dep==2.0 holds --hash=sha256:")
    assert caught.value.cause.endswith(f"which the index {index} lists for no file of that version")
    assert caught.value.code == 2
    (tmp_path / "c.lock").write_text(lock("2.0"))
    result = planned("2026-12-01T00:00:02Z")
    assert result.ok and result.final == {"slime-fixture": "1.0", "slime-fixture-dep": "2.0"}


def test_a_resolution_is_kept_by_what_pip_reads_not_by_how_the_recipe_names_its_files(index, tmp_path, monkeypatch):
    """make plan names the recipe's files relative to the repository, a plan run from elsewhere by their whole path:
    the second finds the first's resolutions. A copy of the recipe in another folder finds them for a step under its
    lock (pip reads the lock's versions from a copy of its own, never the lock's path), not for one that reads a
    requirements file there (pip reads it where it lies). The suite planned the recipe both ways, cold each time."""
    import platform
    import shutil

    from slime_image.lock_file import Pin as LockPin
    from slime_image.lock_file import pin_text

    from tools.inputs.recipe import Recipe
    from tools.planner import plan, sdist_metadata
    from tools.planner.lock_hashes import version_listings

    cache = ROOT / ".cache" / "plan-tests"
    env = FakeEnv(cache / f"env-py312-{platform.machine()}")
    with env.running():
        env.create()  # with the host's index, before the plan is pointed at the local one
    monkeypatch.setenv("PLAN_CACHE", str(cache))
    monkeypatch.setenv("PIP_INDEX_URL", index)  # its port is new each session: the first plan below resolves afresh
    monkeypatch.setattr(sdist_metadata, "FOLDER", tmp_path / "no-records")
    recipe = tmp_path / "recipe"
    recipe.mkdir()
    (recipe / "Dockerfile").write_text(
        "FROM scratch\nCOPY c.lock /opt/c.lock\nENV PIP_CONSTRAINT=/opt/c.lock\nRUN pip install slime-fixture\n"
        "COPY req.txt /opt/req.txt\nRUN pip install -r /opt/req.txt\n"
    )
    (recipe / "req.txt").write_text("slime-fixture-dep\n")
    (recipe / "base.json").write_text(json.dumps({"image": "scratch", "partial": False, "distributions": []}))
    pins = [("slime-fixture", "1.0"), ("slime-fixture-dep", "2.0")]
    found = {n: version_listings(n, {v}, "", index + "/")[v].installable for n, v in pins}
    cutoff = "# uploaded-prior-to: 2026-12-01T00:00:00Z\n"  # the line every lock holds (lock.held_cutoff)
    (recipe / "c.lock").write_text(
        recorded(cutoff + "\n".join(pin_text(LockPin(n, v, found[n])) for n, v in pins) + "\n")
    )
    shutil.copytree(recipe, tmp_path / "copy")

    def notes(dockerfile) -> list[str]:
        options = {"manifest": tmp_path / "recipe" / "base.json", "arch": platform.machine()}
        result = plan.Planner(Recipe.load(dockerfile), log=lambda *a, **k: None, **options).run()
        assert result.ok and result.final == {"slime-fixture": "1.0", "slime-fixture-dep": "2.0"}
        return [step.note for step in result.steps]

    monkeypatch.chdir(tmp_path)
    assert notes(Path("recipe/Dockerfile")) == ["resolved", "resolved"]
    monkeypatch.chdir(ROOT)
    assert notes(recipe / "Dockerfile") == ["cached resolution", "cached resolution"]
    assert notes(tmp_path / "copy" / "Dockerfile") == ["cached resolution", "resolved"]


def test_lock_hashes_stops_at_the_first_read_an_index_never_answers(monkeypatch):
    """Sweep 5 U1: lock_hashes read its pins' pages 16 at a time and, at a server that never answers, waited out every
    batch's timeout in turn (542 s silent for 280 pins); it now stops at the first, within about one timeout (lowered
    here to 1 s: ten batches took 10 s and more)."""
    from tools.planner import lock_hashes

    monkeypatch.setattr(index_http, "TIMEOUT", 1.0, raising=False)
    pins = {(f"p{n}", "1.0") for n in range(lock_hashes.WORKERS * 10)}
    with mute() as upstream:
        how, exc = within(6, lambda: lock_hashes.collect(pins, "2026-12-01T00:00:00Z", f"{upstream}/simple"))
    assert how == "raised" and "no answer in 1 s" in str(exc), exc
