"""slime.Dockerfile's structure, read through the official Dockerfile parser.

Every rule passes on the real recipe and fails on a copy broken the way it guards against.
"""

import re
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT, recorded
from slime_image.errors import UserError
from slime_image.lock_file import pin_text, read_lock

from tools.inputs import download_pins, pairings, rules
from tools.inputs.recipe import Recipe


def test_every_rule_holds_on_the_recipe():
    assert rules.violations(Recipe.load()) == {name: [] for name in rules.RULES}


def _move_requirements_before_sglang(text):
    block_start = text.index("# requirements.txt:")
    block_end = text.index("# Megatron-LM at the commit")
    requirements_block = text[block_start:block_end]
    text = text[:block_start] + text[block_end:]
    sglang_at = text.index("# sglang with the extras")
    return text[:sglang_at] + requirements_block + text[sglang_at:]


def _build_tools_after_sglang(text):
    start = text.index(
        "RUN --mount=type=cache,target=/root/.cache/pip,sharing=locked pip install --report /tmp/report.json setuptools"
    )
    tools = text[start : text.index("\n\n", start) + 1]
    text = text.replace(tools, "")
    anchor = "# TransformerEngine, the version"
    return text.replace(anchor, tools + "\n" + anchor)


BROKEN = {
    "cuda-devel-base": lambda t: re.sub(
        r"^ARG BASE_IMAGE=.*$", "ARG BASE_IMAGE=nvcr.io/nvidia/pytorch:26.02-py3", t, count=1, flags=re.M
    ),
    "one-environment": lambda t: t.replace(
        "ENV VIRTUAL_ENV=/opt/venv \\\n    PATH=/opt/venv/bin:${PATH}", "ENV VIRTUAL_ENV=/opt/venv"
    ),
    "layer-order": _build_tools_after_sglang,
    "loader-path-has-reasons": lambda t: t.replace(
        "/usr/local/nvidia/lib64 \\\n", "/usr/local/nvidia/lib64:/opt/driver-stub \\\n"
    ),
    "sglang-before-requirements": _move_requirements_before_sglang,
    "no-deps-after-requirements": lambda t: t.replace(
        'pip install --no-deps --report /tmp/report.json "mbridge', 'pip install --report /tmp/report.json "mbridge'
    ),
    "numpy-only-in-requirements": lambda t: t.replace('"mbridge==${', '"numpy==2.1.0" "mbridge==${'),
    "version-args-once-and-used": lambda t: t.replace("ARG SLIME_REF=", "ARG RAY_ADDRESS=auto\nARG SLIME_REF="),
    "record-names-every-version": lambda t: t.replace(" SLIME_COMMIT MBRIDGE_VERSION", " SLIME_COMMIT"),
    "copy-sources-exist": lambda t: t.replace("COPY requirements.txt", "COPY requirements-gpu.txt"),
    # An ARG a pip step runs with is an input of the plan's (steps_digest), so its default moved leaves the locks
    # stale.
    "pairing-locks-current": lambda t: t.replace(
        "ARG EFA_INSTALLER_URL=https://efa-installer.amazonaws.com\n", "ARG EFA_INSTALLER_URL=https://m.example/efa\n"
    ),
    "copies-only-the-image-side": lambda t: t.replace(
        "COPY image/ /opt/slime-image/", "COPY image/ /opt/slime-image/\nCOPY slime.Dockerfile /opt/slime-image/"
    ),
    "no-build-time-ssh-keys": lambda t: t.replace(
        "# One virtual environment", "RUN ssh-keygen -A && mkdir -p /run/sshd\n# One virtual environment"
    ),
    "no-cuda-compat-on-loader-path": lambda t: t.replace(
        "/usr/local/nvidia/lib64 \\\n", "/usr/local/nvidia/lib64:/usr/local/cuda/compat/lib \\\n"
    ),
    "build-time-assertions": lambda t: t.replace('[ "$head" = "${SLIME_COMMIT}" ]', "true"),
    "downloads-from-build-args": lambda t: t.replace(
        "# One virtual environment",
        "RUN curl -fsSL https://example.com/tool.sh -o /tmp/tool.sh\n# One virtual environment",
    ),
    "patches-then-smoke-gate": lambda t: t.replace("RUN slime-smoke --stage build", "RUN echo skipped slime-smoke"),
    "installs-by-content": lambda t: t.replace(
        'pip install --no-deps --report /tmp/report.json "mbridge',
        "PIP_CONSTRAINT='' pip install --no-deps --report /tmp/report.json \"mbridge",
    ),
    "download-pins-by-form": lambda t: re.sub(r"^(ARG EFA_INSTALLER_SHA256=)", r"\1sha256:", t, flags=re.M),
    "per-commit-args-after-the-last-run": lambda t: t.replace("ARG IMAGE_REVISION=unknown\n", "").replace(
        "ARG MBRIDGE_VERSION=0.15.1\n", "ARG MBRIDGE_VERSION=0.15.1\nARG IMAGE_REVISION=unknown\n"
    ),
}


@pytest.mark.parametrize("rule", [pytest.param(r, marks=pytest.mark.guard_fails(f"rule:{r}")) for r in sorted(BROKEN)])
def test_rule_fails_on_broken_copy(recipe_copy, rule):
    dockerfile = recipe_copy(BROKEN[rule])
    found = rules.violations(Recipe.load(dockerfile))
    assert found[rule], f"{rule} did not notice the breakage"
    # Breakages that two rules see, each for its own reason: requirements.txt moved up leaves sglang after it
    # without --no-deps and out of order; a compat entry has no reason; a missing smoke gate is a missing layer.
    also = {
        "sglang-before-requirements": {"no-deps-after-requirements", "layer-order"},
        "no-cuda-compat-on-loader-path": {"loader-path-has-reasons"},
        "patches-then-smoke-gate": {"layer-order"},
        "downloads-from-build-args": {"installs-by-content"},
    }.get(rule, set())
    # An edit of what pip reads (a pip step, an ARG) leaves the pairings' locks stale, whatever else it breaks.
    also |= {"pairing-locks-current"}
    assert all(not problems for name, problems in found.items() if name != rule and name not in also), found


@pytest.mark.parametrize("rule", sorted(BROKEN))
def test_a_rule_names_the_line_as_every_pin_and_lock_error_does(recipe_copy, rule, capsys):
    """`FILE:LINE: cause`, the one form of a located error (lock_file, download_pins); the rules said `line N:`."""
    dockerfile = recipe_copy(BROKEN[rule])
    assert rules.report(dockerfile) == 1
    said = capsys.readouterr().err.splitlines()
    assert not [line for line in said if re.search(r"\bline \d+:", line)], said
    assert any(line.startswith(f"{rule}: {dockerfile}:") for line in said) or not any(
        re.search(rf"^{rule}: .*:\d+: ", line) for line in said
    ), said


def test_duplicate_version_default_is_caught(recipe_copy):
    dockerfile = recipe_copy(
        lambda t: t.replace("ARG MBRIDGE_VERSION=0.15.1", "ARG MBRIDGE_VERSION=0.15.1\nARG SGLANG_VERSION=0.5.9")
    )
    problems = rules.violations(Recipe.load(dockerfile))["version-args-once-and-used"]
    assert any("SGLANG_VERSION given a default again" in p for p in problems)


def test_numpy_pin_missing_from_requirements_is_caught(recipe_copy):
    dockerfile = recipe_copy()
    reqs = dockerfile.parent / "requirements.txt"
    reqs.write_text("\n".join(line for line in reqs.read_text().splitlines() if not line.startswith("numpy")))
    assert rules.violations(Recipe.load(dockerfile))["numpy-only-in-requirements"] == [
        "requirements.txt does not constrain numpy"
    ]


def test_pip_steps_are_read_with_args_substituted():
    steps = Recipe.load().installs
    sglang = next(s for s in steps if any(p.startswith("sglang[") for p in s.packages))
    assert sglang.packages == [f"sglang[http2,tracing]=={Recipe.load().args['SGLANG_VERSION']}"]
    assert "${" not in " ".join(w for s in steps for w in s.words)
    mbridge = next(s for s in steps if any(p.startswith("mbridge") for p in s.packages))
    assert mbridge.no_deps


def test_pip_step_forms_are_recognised(tmp_path):
    (tmp_path / "Dockerfile").write_text(
        "FROM scratch\nARG V=1.0\n"
        "RUN MAX_JOBS=4 python3 -m pip install --no-deps -c /c.txt 'a==${V}' && pip3 install -r /r.txt -e /src\n"
        "RUN echo pip install not-a-step | cat; /usr/bin/pip install --force-reinstall --constraint=/x b\n"
    )
    steps = Recipe.load(tmp_path / "Dockerfile").installs
    assert [(s.line, s.no_deps, s.force_reinstall, s.packages, s.requirements, s.constraints) for s in steps] == [
        (3, True, False, ["a==1.0"], [], ["/c.txt"]),
        (3, False, False, ["/src"], ["/r.txt"], []),
        (4, False, True, ["b"], [], ["/x"]),
    ]


def test_a_missing_dockerfile_is_named_as_missing(tmp_path):
    with pytest.raises(UserError) as caught:
        Recipe.load(tmp_path / "missing.Dockerfile")
    assert caught.value.cause == f"no Dockerfile at {tmp_path / 'missing.Dockerfile'}"


def test_an_unparsable_dockerfile_names_the_parser_error(tmp_path):
    (tmp_path / "Dockerfile").write_text("# only a comment\n")
    with pytest.raises(UserError) as caught:
        Recipe.load(tmp_path / "Dockerfile")
    assert "not a valid Dockerfile" in caught.value.cause


def test_the_recipe_model_holds_what_its_readers_ask():
    recipe = Recipe.load()
    assert recipe.copies["/opt/slime-image/requirements.txt"] == ROOT / "requirements.txt"
    assert recipe.constraint_file() == pairings.default().lock
    assert recipe.requirements_step is not None and recipe.requirements_step.reads_requirements_txt
    assert recipe.env["PIP_CONSTRAINT"] == "/opt/slime-image/constraints.lock"
    assert list(recipe.version_args()) == recipe.version_names and "BASE_IMAGE" in recipe.version_names


def test_rules_command_reports_and_exits_nonzero_on_breakage(recipe_copy):
    dockerfile = recipe_copy(BROKEN["no-build-time-ssh-keys"])
    run = subprocess.run([sys.executable, "-m", "tools.inputs.rules", str(dockerfile)], capture_output=True, text=True)
    assert run.returncode == 1
    assert "no-build-time-ssh-keys" in run.stderr
    assert "Traceback" not in run.stderr


HADOLINT = shutil.which("hadolint") or str(ROOT / ".venv" / "bin" / "hadolint")


def _hadolint(path):
    return subprocess.run(
        [HADOLINT, "-c", str(ROOT / ".hadolint.yaml"), "-f", "json", str(path)], capture_output=True, text=True
    )


def test_hadolint_clean_at_warning_threshold():
    run = _hadolint(ROOT / "slime.Dockerfile")
    assert run.returncode == 0, run.stdout + run.stderr


def test_hadolint_fails_on_a_broken_copy(recipe_copy):
    dockerfile = recipe_copy(lambda t: t.replace("FROM ${BASE_IMAGE}", "FROM ubuntu:latest"))
    run = _hadolint(dockerfile)
    assert run.returncode != 0
    assert "DL3007" in run.stdout


def test_every_ignored_hadolint_rule_has_a_reason():
    lines = (ROOT / ".hadolint.yaml").read_text().splitlines()
    ignored = [i for i, line in enumerate(lines) if line.strip().startswith("- DL")]
    assert ignored
    for i in ignored:
        assert lines[i - 1].strip().startswith("#"), f"{lines[i].strip()} has no reason above it"


@pytest.mark.parametrize(
    "edit, expected",
    [
        (lambda t: t.replace(":/usr/local/cuda/lib64:", ":"), "LD_LIBRARY_PATH lacks /usr/local/cuda/lib64"),
        (lambda t: t.replace(" \\\n    NCCL_NET_PLUGIN=ofi", ""), "NCCL_NET_PLUGIN is unset"),
        (lambda t: t.replace("/opt/amazon/ofi-nccl/lib:", "/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu:"), "no reason"),
    ],
)
def test_loader_path_entries_need_their_reasons(recipe_copy, edit, expected):
    problems = rules.violations(Recipe.load(recipe_copy(edit)))["loader-path-has-reasons"]
    assert any(expected in p for p in problems), problems


@pytest.mark.parametrize(
    "edit, expected",
    [
        (
            lambda t: t.replace("python3.12 -m venv /opt/venv && \\\n", ""),
            "no RUN makes",
        ),
        (
            lambda t: t.replace(
                "# One virtual environment", "RUN pip3 install --break-system-packages six\n# One virtual"
            ),
            "runs before the venv exists",
        ),
        (
            lambda t: t.replace(
                "pip_reports.py /tmp/report.json kernels && \\\n    pip uninstall",
                "pip_reports.py /tmp/report.json kernels\nRUN pip uninstall",
            ),
            "removes what an earlier layer installed",
        ),
    ],
)
def test_one_environment_fails_on_a_second_one(recipe_copy, edit, expected):
    problems = rules.violations(Recipe.load(recipe_copy(edit)))["one-environment"]
    assert any(expected in p for p in problems), problems


def test_te_build_without_force_build_is_a_hidden_download(recipe_copy):
    dockerfile = recipe_copy(lambda t: t.replace("NVTE_PYTORCH_FORCE_BUILD=TRUE ", ""))
    problems = rules.violations(Recipe.load(dockerfile))["downloads-from-build-args"]
    assert len(problems) == 1 and "NVTE_PYTORCH_FORCE_BUILD=TRUE" in problems[0]


@pytest.mark.parametrize(
    "default", ['"https://efa-installer.amazonaws.com/a b"', "https://[::1", "efa-installer.amazonaws.com"]
)
def test_a_url_arg_default_that_is_no_url_is_caught(recipe_copy, default):
    """Sweep 4 row 1: the Dockerfile's own default is the third place a URL value enters, held to url_form as a
    pairing's value and a build argument are."""
    dockerfile = recipe_copy(
        lambda t: t.replace(
            "ARG EFA_INSTALLER_URL=https://efa-installer.amazonaws.com", f"ARG EFA_INSTALLER_URL={default}"
        )
    )
    problems = rules.violations(Recipe.load(dockerfile))["downloads-from-build-args"]
    assert len(problems) == 1 and "ARG EFA_INSTALLER_URL=" in problems[0], problems


def test_build_time_imports_need_the_driver_stub(recipe_copy):
    dockerfile = recipe_copy(
        lambda t: t.replace(
            'LD_LIBRARY_PATH="/opt/driver-stub:${LD_LIBRARY_PATH}" python -c "import transformer_engine.pytorch"',
            "true",
        )
    )
    problems = rules.violations(Recipe.load(dockerfile))["build-time-assertions"]
    assert problems == ["no build-time import of transformer_engine.pytorch with the driver stub (W9, W10)"]


def test_the_image_resolves_with_the_pip_the_planner_uses():
    """The plan is exact only if the planner's pip is the image's pip (the image's is PIP_VERSION)."""
    from tools.planner.plan_env import planner_pip

    assert Recipe.load().args["PIP_VERSION"] == planner_pip()


@pytest.mark.guard_fails("rule:unused-left-out")
def test_cutile_compilers_a_step_brings_and_keeps_are_named(recipe_copy):
    dockerfile = recipe_copy()
    recipe = Recipe.load(dockerfile)
    assert rules.violations(recipe)["unused-left-out"] == []
    # What make lock writes when a step brings nvcc 13.2 and keeps it (the planner's replay ends with it installed).
    lock = dockerfile.parent / "locks" / f"{recipe.args['PAIRING']}.lock"
    nvcc = read_lock(lock.with_suffix(".stack.lock")).pins["nvidia-cuda-nvcc"]  # its pin, hashes and all
    lock.write_text(recorded(lock.read_text() + pin_text(nvcc) + "\n"))
    problems = rules.violations(Recipe.load(dockerfile))["unused-left-out"]
    assert len(problems) == 1 and "pins nvidia-cuda-nvcc==13.2.86" in problems[0], problems


# Each way a step can take bytes the recipe does not name (W50), on a copy of the recipe: the rule names each.
BY_NAME = {
    "a download by URL alone": (
        lambda t: t.replace(
            'python3.12 /opt/slime-image/slime_image/fetch.py "${EFA_INSTALLER_URL}',
            'curl -fsSLo /tmp/aws-efa-installer.tar.gz "${EFA_INSTALLER_URL}',
        ).replace('\n      "${EFA_INSTALLER_SHA256}" /tmp/aws-efa-installer.tar.gz && \\', " && \\"),
        "curl downloads by name",
    ),
    "a fetch without its pin": (
        lambda t: t.replace('"${EFA_INSTALLER_SHA256}" /tmp/aws-efa', '"" /tmp/aws-efa'),
        "fetch.py without a *_SHA256 build argument",
    ),
    "an index install with the lock set aside": (
        lambda t: t.replace(
            'pip install --no-deps --report /tmp/report.json "mbridge',
            "PIP_CONSTRAINT='' pip install --no-deps --report /tmp/report.json \"mbridge",
        ),
        "with the lock set aside installs from an index",
    ),
    "a source tree built in isolation with the lock set aside": (
        lambda t: t.replace(
            "--no-deps --no-build-isolation --report /tmp/report.json -e /opt/Megatron-LM",
            "--no-deps --report /tmp/report.json -e /opt/Megatron-LM",
        ),
        "builds in isolation, taking its build requirements from the index by name",
    ),
    "pip's own wheel unchecked": (
        lambda t: t.replace(
            '"/tmp/pip-${PIP_VERSION}-py3-none-any.whl" && \\',
            '"/tmp/pip-${PIP_VERSION}-py3-none-any.whl" && \\\n    python -m pip install pip==26.3 && \\',
        ),
        "pip install before any lock",
    ),
    "a pip step before any lock": (
        lambda t: t.replace(
            "# One virtual environment", "RUN pip install --break-system-packages wheel\n# One virtual environment"
        ),
        "pip install before any lock",
    ),
}


@pytest.mark.guard_fails("rule:installs-by-content")
@pytest.mark.parametrize("case", sorted(BY_NAME))
def test_every_way_of_taking_bytes_by_name_is_named(recipe_copy, case):
    breakage, expected = BY_NAME[case]
    dockerfile = recipe_copy(breakage)
    problems = rules.violations(Recipe.load(dockerfile))["installs-by-content"]
    assert any(expected in p for p in problems), problems


@pytest.mark.guard_fails("rule:installs-by-content")
def test_a_lock_pin_without_its_hashes_is_named(recipe_copy):
    dockerfile = recipe_copy()
    lock = dockerfile.parent / "locks" / f"{Recipe.load(dockerfile).args['PAIRING']}.lock"
    pinned = re.compile(r"^numpy==1\.26\.4 \\\n(?:    --hash=sha256:\w+ \\\n)*    --hash=sha256:\w+$", re.MULTILINE)
    lock.write_text(pinned.sub("numpy==1.26.4", lock.read_text(), count=1))
    problems = rules.violations(Recipe.load(dockerfile))["installs-by-content"]
    assert any("numpy==1.26.4 carries no --hash" in p for p in problems), problems


SHORT = 200  # the longest a fix line may be: one sentence, the one fix of its cause
# Sweep 3 row 15: download-pins-by-form said every fix it knows in one line (~520 characters) for any one cause; each
# cause it finds, with the one fix that applies, the fix make build says for the same cause.
PIN_CAUSES = {
    "a sha256: prefix": (
        lambda t: re.sub(r"^(ARG EFA_INSTALLER_SHA256=)", r"\1sha256:", t, flags=re.M),
        download_pins.PIN_FIX,
    ),
    "a base digest of 63 digits": (
        lambda t: re.sub(r"(ARG BASE_IMAGE=.*@sha256:)\w", r"\1", t),
        download_pins.BASE_FIX,
    ),
    "a pin without its note": (
        lambda t: re.sub(r"^# PIP_SHA256 from: .*\n", "", t, flags=re.M),
        download_pins.NOTE_FIX,
    ),
    "an ARG pin without a default": (
        lambda t: t.replace("ARG SGL_ROUTER_SHA256=\n", "ARG SGL_ROUTER_SHA256\n"),
        download_pins.DEFAULT_FIX,
    ),
    "an ENV over a pin": (
        lambda t: t.replace("# One virtual environment", "ENV PIP_SHA256=\n# One virtual environment", 1),
        download_pins.ENV_FIX,
    ),
}


@pytest.mark.parametrize("cause", sorted(PIN_CAUSES))
def test_a_malformed_download_pin_gets_the_one_fix_of_its_cause_as_make_build_does(recipe_copy, cause, capsys):
    edit, fix = PIN_CAUSES[cause]
    dockerfile = recipe_copy(edit)
    assert rules.report(dockerfile) == 1
    said = capsys.readouterr().err.splitlines()
    assert said[-1] == f"fix: {fix}" and len(said[-1]) <= SHORT, said
    with pytest.raises(UserError) as build_refused:
        download_pins.check_recipe(Recipe.load(dockerfile))
    assert build_refused.value.fix == fix


@pytest.mark.parametrize("rule", sorted(BROKEN))
def test_every_rule_follows_its_causes_with_one_short_fix(recipe_copy, rule, capsys):
    """Each run of a rule's causes that share a fix is followed by that one fix's line, short enough to read."""
    assert rules.report(recipe_copy(BROKEN[rule])) == 1
    said = capsys.readouterr().err.splitlines()
    own = said[next(i for i, line in enumerate(said) if line.startswith(f"{rule}: ")) :]
    own = own[: next(i for i, line in enumerate(own) if line.startswith("fix: ")) + 1]
    assert all(line.startswith(f"{rule}: ") for line in own[:-1]), own
    assert len(own[-1]) <= SHORT, own[-1]
