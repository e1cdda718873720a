"""The planner on Dockerfiles of other shapes than this project's: the base from FROM (literal or ARG, the built
stage of several), pip's other spellings, -r through COPY from a --context, URL wheels, what it cannot simulate,
and the findings a user of any recipe needs (W9, W1, W8). Small real packages from PyPI; Dockerfiles written
here; a recipe shaped like the peer's over the NGC manifest. No upstream file is in this repository."""

import json

import pytest
from conftest import ROOT
from test_plan import CUTOFF, run_plan

pytestmark = pytest.mark.slow


def plan(tmp_path, dockerfile, *args, manifest=None, files=None):
    (tmp_path / "Dockerfile").write_text(dockerfile)
    for name, text in (files or {}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    extra = []
    if manifest is not None:
        (tmp_path / "base.json").write_text(json.dumps({"image": "test", "partial": False, "distributions": manifest}))
        extra = ["--base-manifest", str(tmp_path / "base.json")]
    dockerfile_args = ["--dockerfile", str(tmp_path / "Dockerfile"), "--uploaded-prior-to", CUTOFF]
    return run_plan(*dockerfile_args, *extra, *args, "--json", "-")


def test_a_base_with_no_manifest_says_which_it_needs_and_how_to_make_it(tmp_path):
    proc, _ = plan(tmp_path, "FROM python:3.12-slim\nRUN pip install six==1.16.0\n")
    assert proc.returncode == 2
    cause, fix = proc.stderr.strip().splitlines()[-2:]
    assert (
        cause
        == "plan: no base-image manifest for python:3.12-slim: the plan needs base-manifests/python_3.12-slim.json"
    )
    assert fix.startswith("fix: make base-manifest BASE_IMAGE=python:3.12-slim") and "--assume-empty-base" in fix


def test_an_empty_base_only_when_asked_and_said_so(tmp_path):
    proc, report = plan(tmp_path, "FROM python:3.12-slim\nRUN pip install six==1.16.0\n", "--assume-empty-base")
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert report["base"]["manifest"] is None and report["final"] == {"six": "1.16.0"}
    said = "base: python:3.12-slim (ASSUMED EMPTY; no manifest of this image (--assume-empty-base): the plan ignores"
    assert said in proc.stderr and "None" not in proc.stderr


def test_the_base_through_an_arg_and_the_built_stage_of_several(tmp_path):
    dockerfile = (
        "ARG BASE=python:3.12-slim\n"
        "FROM ${BASE} AS tools\nRUN pip install six==1.16.0\n"
        "FROM tools AS app\nRUN python3 -m pip install --no-deps idna==3.10\n"
        "FROM scratch AS other\nRUN pip install numpy==2.1.0\n"
        "FROM app\nRUN python -m pip install --no-deps packaging==25.0\n"
    )
    proc, report = plan(tmp_path, dockerfile, "--assume-empty-base")
    assert report["base"]["image"] == "python:3.12-slim", proc.stderr[-1500:]
    assert report["final"] == {"six": "1.16.0", "idna": "3.10", "packaging": "25.0"}
    _, report = plan(tmp_path, dockerfile, "--assume-empty-base", "--target", "other")
    assert report["final"] == {"numpy": "2.1.0"} and report["base"]["image"] == "scratch"


def test_requirements_through_copy_from_another_context_and_a_url_wheel(tmp_path):
    context = tmp_path / "context"
    files = {"context/deps/req.txt": "six==1.16.0\n"}
    url = "https://files.pythonhosted.org/packages/packaging-25.0-py3-none-any.whl"
    dockerfile = (
        "FROM scratch\nCOPY deps/req.txt /tmp/req.txt\nRUN pip3 install -r /tmp/req.txt\n"
        f"RUN pip install --no-deps {url}\n"
    )
    proc, report = plan(tmp_path, dockerfile, "--context", str(context), manifest=[], files=files)
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert report["final"] == {"six": "1.16.0", "packaging": "25.0"}
    assert "packaging 25.0 from its wheel (not fetched; --no-deps)" in report["steps"][1]["note"]


def test_a_step_it_cannot_simulate_is_listed_with_its_reason_and_fails_the_plan(tmp_path):
    dockerfile = "FROM scratch\nRUN uv pip install --system six\nRUN pip install $(cat /tmp/list)\n"
    proc, report = plan(tmp_path, dockerfile, manifest=[])
    notes = [(s["line"], s["simulated"], s["note"]) for s in report["steps"]]
    assert notes[0][:2] == (2, False) and "uv installs packages the planner does not simulate" in notes[0][2]
    assert notes[1][:2] == (3, False) and "shell expansion the planner cannot evaluate" in notes[1][2]
    assert proc.returncode == 1 and [f.split(":")[0] for f in report["findings"]] == ["blind-step", "blind-step"]


@pytest.mark.guard_fails("finding:torch-replaced-under-extensions")
def test_w9_an_extension_left_behind_by_a_torch_replacement_is_named(tmp_path):
    manifest = [
        {"name": "torch", "version": "2.5.0a0+local", "requires": []},
        {"name": "flash_attn", "version": "2.7.4.post1", "requires": ["torch"]},
    ]
    proc, report = plan(tmp_path, "FROM scratch\nRUN pip install --no-deps torch==2.6.0\n", manifest=manifest)
    assert proc.returncode == 1
    assert report["steps"][0]["findings"] == [
        "W9: flash-attn 2.7.4.post1 was built against torch 2.5.0a0+local, which this step replaced with 2.6.0: "
        "importing it fails with undefined symbol _ZN3c10...; rebuild or remove it"
    ]


@pytest.mark.guard_fails("finding:numpy-2-at-the-end")
def test_w1_numpy_2_at_the_end_while_slime_is_installed(tmp_path):
    dockerfile = (
        "FROM scratch\nARG SLIME_REF=v0.3.0\nRUN pip install numpy==2.1.0\nRUN pip install --no-deps -e /opt/slime\n"
    )
    proc, report = plan(tmp_path, dockerfile, manifest=[])
    assert proc.returncode == 1
    assert report["final_findings"][0].startswith("W1: numpy 2.1.0 at the end while slime is installed")


@pytest.mark.guard_fails("finding:stock-router-at-the-end")
def test_w8_a_stock_router_after_the_slime_wheel(tmp_path):
    wheel = "https://github.com/zhuzilin/sgl-router/releases/sglang_router-0.3.2-cp38-abi3-manylinux_2_28_x86_64.whl"
    dockerfile = (
        f"FROM scratch\nRUN pip install --no-deps {wheel}\n"
        "RUN pip install --no-deps --force-reinstall sglang-router==0.3.1\n"
    )
    proc, report = plan(tmp_path, dockerfile, manifest=[])
    assert proc.returncode == 1
    assert report["final_findings"][0].startswith("W8: sglang-router 0.3.1 at the end came from line 3")
    assert report["invariants"]["stock_sglang_router_absent"] is False


def test_a_recipe_shaped_like_the_peer_s_over_the_ngc_manifest(tmp_path):
    """NGC base, sglang[all], then a requirements file with numpy<2 and nothing else."""
    dockerfile = (
        "FROM nvcr.io/nvidia/pytorch:26.02-py3\n"
        'RUN pip install --no-cache-dir "sglang[all]==0.5.12.post1"\n'
        "COPY requirements.txt /tmp/requirements.txt\n"
        "RUN pip install --no-cache-dir -r /tmp/requirements.txt\n"
    )
    proc, report = plan(tmp_path, dockerfile, files={"requirements.txt": "numpy<2\n"})
    assert proc.returncode == 1, proc.stderr[-1500:]
    assert report["base"]["manifest"] == "base-manifests/nvcr.io_nvidia_pytorch_26.02-py3.json"
    assert report["base"]["partial"] is True
    broken = " ".join(report["broken"])
    assert "ml-dtypes" in broken and "tifffile" in broken
    # NGC 26.02 ships scipy 1.17.0 (docs/facts.md), which numpy 1.26 satisfies: only a base without scipy breaks it.
    assert "scipy" not in broken and report["final"]["scipy"] == "1.17.0"
    w9 = [f for f in report["steps"][0]["findings"] if f.startswith("W9: transformer-engine 2.12.0+5671fd36")]
    assert w9 and "replaced with 2.11.0" in w9[0]
    assert (ROOT / report["base"]["manifest"]).is_file()


WHEELS_STAGE = "FROM python:3.12-slim AS wheels\nRUN pip wheel -w /wheels six==1.16.0\nFROM scratch\n"
BLIND = [
    (
        "FROM scratch\nARG SIX_VERSION\nRUN pip install six==${SIX_VERSION}\n",
        3,
        "ARG SIX_VERSION has no default: give it one (ARG SIX_VERSION=VALUE) or pass --build-arg SIX_VERSION=VALUE",
    ),
    (
        "ARG SIX_VERSION=1.16.0\nFROM scratch\nRUN pip install six==$SIX_VERSION\n",
        3,
        "ARG SIX_VERSION is declared before FROM, which Docker does not carry past it: declare it again (ARG "
        "SIX_VERSION) after the FROM of the stage that uses it",
    ),
    (
        WHEELS_STAGE + "COPY --from=wheels /wheels /wheels\nRUN pip install /wheels/six-1.16.0-py2.py3-none-any.whl\n",
        5,
        "/wheels/six-1.16.0-py2.py3-none-any.whl comes from COPY --from=wheels, which the plan cannot read: COPY it "
        "from the build context, or install it from the index by name and version",
    ),
    (
        WHEELS_STAGE + "WORKDIR /opt\nCOPY --from=wheels /wheels/req.txt req.txt\nRUN pip install -r /opt/req.txt\n",
        6,
        "/opt/req.txt comes from COPY --from=wheels, which the plan cannot read: COPY it from the build context, or "
        "install it from the index by name and version",
    ),
]


@pytest.mark.guard_fails("finding:blind-step")
@pytest.mark.parametrize(
    "dockerfile, line, cause", BLIND, ids=["arg-without-default", "arg-before-from", "copy-from", "req-from"]
)
def test_a_blind_step_fails_the_plan_and_says_how_to_give_the_value(tmp_path, dockerfile, line, cause):
    """Each of these ended NOT SIMULATED and then plan: OK, exit 0 (issues 40 and 46): the plan had not seen what the
    step installs, and said nothing was wrong. (An ENV's value, which issue 40 found blind, the plan now reads as the
    build's shell does: test_plan_blind.py.)"""
    proc, report = plan(tmp_path, dockerfile, "--report-json", str(tmp_path / "plan.json"), manifest=[])
    assert proc.returncode == 1, proc.stderr[-1500:]
    step = next(s for s in report["steps"] if s["line"] == line)
    assert step["simulated"] is False and step["findings"] == [f"blind-step: line {line}: {cause}"]
    assert report["ok"] is False and "plan: FAILED" in proc.stderr
    row = next(c for c in json.loads((tmp_path / "plan.json").read_text())["checks"] if c["id"] == "blind-step")
    assert row["status"] == "fail" and row["summary"] == f"blind-step: line {line}: {cause}"
    assert "--build-arg NAME=VALUE" in row["fix"] and "--allow-blind" in row["fix"]


def test_allow_blind_lets_a_blind_step_pass_as_a_warning(tmp_path):
    dockerfile, line, cause = BLIND[0]
    proc, report = plan(
        tmp_path, dockerfile, "--allow-blind", "--report-json", str(tmp_path / "plan.json"), manifest=[]
    )
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert (
        report["ok"] is True
        and report["findings"] == []
        and report["warnings"] == [f"blind-step: line {line}: {cause}"]
    )
    assert "WARNING (--allow-blind) blind-step: line 3: ARG SIX_VERSION has no default" in proc.stderr
    row = next(c for c in json.loads((tmp_path / "plan.json").read_text())["checks"] if c["id"] == "blind-step")
    assert row["status"] == "warn" and row["summary"] == f"blind-step: line {line}: {cause}"


def test_a_build_arg_gives_the_plan_the_value_an_arg_lacks(tmp_path):
    proc, report = plan(tmp_path, BLIND[0][0], "--build-arg", "SIX_VERSION=1.16.0", manifest=[])
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert report["final"] == {"six": "1.16.0"} and report["steps"][0]["simulated"] is True
