"""The plan is OK only when it simulated every step that installs Python packages (issue 46): each shape a RUN can
install in is either followed and simulated, or the failing finding blind-step. Docker's scope rules for ARG and ENV
apply, and every PIP_* variable a step runs with is read as the pip option it stands for.

Each plan runs in this process over the shared test cache (.cache/plan-tests); a blind step asks nothing of the index,
a followed one resolves small real packages as the index stood at CUTOFF."""

import json
import re
from pathlib import Path

import pytest
from conftest import ROOT, recorded
from test_plan import CUTOFF

from tools.inputs import recipe_steps, run_shell
from tools.inputs.recipe import Recipe
from tools.planner.plan_check import Planner

pytestmark = pytest.mark.slow
ARCH = "x86_64"
# How the scan and the shell walk mark the construct a step passed: (*via, "NAME") or ... += ("NAME",)
MARK = re.compile(r'\(\*(?:scope\.)?via, "([^"]+)"\)|\+= \("([^"]+)",\)')


@pytest.fixture
def plan(tmp_path, monkeypatch):
    monkeypatch.setenv("PLAN_CACHE", str(ROOT / ".cache" / "plan-tests"))
    (tmp_path / "base.json").write_text(json.dumps({"image": "scratch", "partial": False, "distributions": []}))

    def run(dockerfile: str, **files: str):
        (tmp_path / "Dockerfile").write_text(dockerfile)
        for name, text in files.items():
            (tmp_path / name).write_text(text)
        recipe = Recipe.load(tmp_path / "Dockerfile")
        planner = Planner(recipe, manifest=tmp_path / "base.json", arch=ARCH, log=lambda *a, **k: None, cutoff=CUTOFF)
        return planner.run()

    return run


def blind_lines(plan) -> list[int]:
    return [int(f.split()[2].rstrip(":")) for f in plan.findings if f.startswith("blind-step:")]


# (id, Dockerfile, the line of the step the plan cannot simulate): each ended `plan: OK` before issue 46.
BLIND = [
    ("uv-pip", "FROM scratch\nRUN uv pip install --system six==1.16.0\n", 2),
    ("target", "FROM scratch\nRUN pip install --target /opt/t six==1.16.0\n", 2),
    ("prefix", "FROM scratch\nRUN pip install --prefix=/opt/p six==1.16.0\n", 2),
    ("user", "FROM scratch\nRUN pip install --user six==1.16.0\n", 2),
    ("isolated", "FROM scratch\nRUN pip install --isolated six==1.16.0\n", 2),
    ("env-pip-target", "FROM scratch\nENV PIP_TARGET=/opt/t\nRUN pip install six==1.16.0\n", 3),
    ("env-pip-prefix", "FROM scratch\nENV PIP_PREFIX=/opt/p\nRUN pip install six==1.16.0\n", 3),
    ("env-pip-user", "FROM scratch\nENV PIP_USER=1\nRUN pip install six==1.16.0\n", 3),
    ("env-pip-config-file", "FROM scratch\nENV PIP_CONFIG_FILE=/etc/my-pip.conf\nRUN pip install six==1.16.0\n", 3),
    ("prefix-env-target", "FROM scratch\nRUN PIP_TARGET=/opt/t pip install six==1.16.0\n", 2),
    ("arg-before-from", "ARG SIX=1.16.0\nFROM scratch\nRUN pip install six==${SIX}\n", 3),
    ("shell-expansion", "FROM scratch\nRUN pip install $(cat /tmp/list)\n", 2),
    ("loop-variable", "FROM scratch\nRUN for p in six; do pip install $p; done\n", 2),
    ("xargs", "FROM scratch\nRUN xargs pip install < /tmp/list\n", 2),
    ("sudo", "FROM scratch\nRUN sudo -H pip install six==1.16.0\n", 2),
    ("python-c", "FROM scratch\nRUN python -c \"import os; os.system('pip install six')\"\n", 2),
    ("pip-config", "FROM scratch\nRUN pip config set global.no-deps true\n", 2),
    ("conda", "FROM scratch\nRUN conda install -y six\n", 2),
    ("setup-py", "FROM scratch\nRUN cd /opt/six && python setup.py install\n", 2),
    (
        "other-venv-pip",
        "FROM scratch\nENV VIRTUAL_ENV=/opt/venv PATH=/opt/venv/bin:$PATH\nRUN /opt/tools/bin/pip install six\n",
        3,
    ),
    (
        "activate",
        "FROM scratch\nENV VIRTUAL_ENV=/opt/venv\nRUN . /opt/other/bin/activate && pip install six==1.16.0\n",
        3,
    ),
    ("local-tree", "FROM scratch\nRUN pip install /opt/mypackage\n", 2),
    (
        "copy-from-venv",
        "FROM scratch AS build\nRUN pip install six==1.16.0\nFROM scratch\nENV VIRTUAL_ENV=/opt/venv\n"
        "COPY --from=build /opt/venv /opt/venv\n",
        5,
    ),
    (
        "copy-from-site-packages",
        "FROM scratch AS build\nFROM scratch\nCOPY --from=build /usr/local/lib/python3.12/site-packages "
        "/usr/local/lib/python3.12/site-packages\n",
        3,
    ),
    ("add-into-site-packages", "FROM scratch\nADD six.tar /usr/lib/python3/dist-packages/\n", 2),
    ("non-posix-shell", 'FROM scratch\nSHELL ["pwsh", "-Command"]\nRUN pip install six==1.16.0\n', 3),
    # A new user's sweep found each of these `plan: OK` after issue 46: pip behind an expansion or an alias, a pip
    # configuration file, another environment by PATH or with none declared.
    ("variable-program", "FROM scratch\nRUN p=pip; $p install six==1.16.0\n", 2),
    ("substituted-program", "FROM scratch\nRUN $(echo pip) install six==1.16.0\n", 2),
    ("backquoted-program", "FROM scratch\nRUN `which pip` install six==1.16.0\n", 2),
    ("default-program", "FROM scratch\nRUN ${PIP:-pip} install six==1.16.0\n", 2),
    ("exec-form-variable", 'FROM scratch\nRUN ["/bin/sh", "-c", "p=pip; $p install six==1.16.0"]\n', 2),
    ("exec-form-pip-conf", 'FROM scratch\nRUN ["cp", "/tmp/my.conf", "/etc/pip.conf"]\n', 2),
    ("copy-pip-conf", "FROM scratch\nCOPY pip.conf /etc/pip.conf\nRUN pip install six==1.16.0\n", 2),
    ("copy-pip-conf-folder", "FROM scratch\nCOPY pip.conf /etc/xdg/pip/\nRUN pip install six==1.16.0\n", 2),
    ("write-pip-conf", "FROM scratch\nRUN printf '[global]\\nno-deps=true\\n' > /etc/pip.conf && pip install six\n", 2),
    (
        "path-prefix",
        "FROM scratch\nENV VIRTUAL_ENV=/opt/venv PATH=/opt/venv/bin:$PATH\nRUN PATH=/other/bin:$PATH pip install six\n",
        3,
    ),
    (
        "path-export",
        "FROM scratch\nENV VIRTUAL_ENV=/opt/venv PATH=/opt/venv/bin:$PATH\n"
        "RUN export PATH=/o/bin:$PATH && pip install x\n",
        3,
    ),
    ("venv-by-path-no-venv-declared", "FROM scratch\nRUN python3 -m venv /x && /x/bin/pip install six==1.16.0\n", 2),
    ("activate-no-venv-declared", "FROM scratch\nRUN . /venv/bin/activate && pip install six==1.16.0\n", 2),
]


@pytest.mark.guard_fails("finding:blind-step")
@pytest.mark.parametrize("dockerfile, line", [b[1:] for b in BLIND], ids=[b[0] for b in BLIND])
def test_a_step_the_plan_cannot_simulate_is_blind(plan, dockerfile, line):
    planned = plan(dockerfile)
    assert line in blind_lines(planned), planned.findings
    assert not planned.ok


# (id, Dockerfile, the final environment): pip found where the shell runs it, and each PIP_* variable honoured.
FOLLOWED = [
    ("sh-c", "FROM scratch\nRUN sh -c 'pip install six==1.16.0'\n", {"six": "1.16.0"}),
    ("bash-c", 'FROM scratch\nRUN bash -ec "cd /tmp && pip install six==1.16.0"\n', {"six": "1.16.0"}),
    ("subshell", "FROM scratch\nRUN (cd /tmp && pip install six==1.16.0) && true\n", {"six": "1.16.0"}),
    ("command-substitution", "FROM scratch\nRUN echo $(pip install six==1.16.0)\n", {"six": "1.16.0"}),
    ("alias", "FROM scratch\nRUN alias p='pip install'; p six==1.16.0\n", {"six": "1.16.0"}),
    ("pip3.12", "FROM scratch\nRUN pip3.12 install six==1.16.0\n", {"six": "1.16.0"}),
    ("python-flags-m-pip", "FROM scratch\nRUN python3 -I -m pip install six==1.16.0\n", {"six": "1.16.0"}),
    ("pip-general-option-first", "FROM scratch\nRUN pip -q install six==1.16.0\n", {"six": "1.16.0"}),
    (
        "venv-pip",
        "FROM scratch\nENV VIRTUAL_ENV=/opt/venv\nRUN /opt/venv/bin/pip install six==1.16.0\n",
        {"six": "1.16.0"},
    ),
    ("env-wrapper", "FROM scratch\nRUN env PIP_NO_DEPS=1 pip install requests==2.32.3\n", {"requests": "2.32.3"}),
    ("prefix-no-deps", "FROM scratch\nRUN PIP_NO_DEPS=1 pip install requests==2.32.3\n", {"requests": "2.32.3"}),
    (
        "export-no-deps",
        "FROM scratch\nRUN export PIP_NO_DEPS=1 && pip install requests==2.32.3\n",
        {"requests": "2.32.3"},
    ),
    ("env-no-deps", "FROM scratch\nENV PIP_NO_DEPS=1\nRUN pip install requests==2.32.3\n", {"requests": "2.32.3"}),
    (
        "arg-pip-no-deps",
        "FROM scratch\nARG PIP_NO_DEPS=yes\nRUN pip install requests==2.32.3\n",
        {"requests": "2.32.3"},
    ),
    (
        "env-inherited-from-stage",
        "FROM scratch AS base\nENV PIP_NO_DEPS=1\nFROM base\nRUN pip install requests==2.32.3\n",
        {"requests": "2.32.3"},
    ),
    ("exec-form", 'FROM scratch\nRUN ["pip", "install", "six==1.16.0"]\n', {"six": "1.16.0"}),
    ("pass-through", "FROM scratch\nRUN exec pip install six==1.16.0\n", {"six": "1.16.0"}),
    ("workdir", "FROM scratch\nWORKDIR /opt\nRUN pip install six==1.16.0\n", {"six": "1.16.0"}),
    (
        "unset",
        "FROM scratch\nENV PIP_TARGET=/opt/t\nRUN unset PIP_TARGET && pip install six==1.16.0\n",
        {"six": "1.16.0"},
    ),
    (
        "prefix-constraint",
        "FROM scratch\nCOPY cap.txt /cap.txt\nRUN PIP_CONSTRAINT=/cap.txt pip install six\n",
        {"six": "1.16.0"},
    ),
    (
        "prefix-constraint-emptied",
        "FROM scratch\nCOPY cap.lock /cap.lock\nENV PIP_CONSTRAINT=/cap.lock\nRUN PIP_CONSTRAINT= pip install six\n",
        {"six": "1.17.0"},
    ),
    (
        "arg-redeclared-after-from",
        "ARG SIX=1.16.0\nFROM scratch\nARG SIX\nRUN pip install six==${SIX}\n",
        {"six": "1.16.0"},
    ),
]


# A lock the recipe sets (ENV PIP_CONSTRAINT) is one: each pin with the sha256 of its files (PyPI's, for six 1.16.0).
CAP_LOCK = recorded(  # with the cutoff line and the record of its pins every lock holds (lock.held_cutoff, held_pins)
    "# uploaded-prior-to: 2026-12-01T00:00:00Z\n"
    "six==1.16.0 \\\n    --hash=sha256:1e61c37477a1626458e36f7b1d82aa5c9b094fa4802892072e49de9c60c4c926 \\\n"
    "    --hash=sha256:8abb2f1d86890a2dfb989f9a77cfcfd3e47c2a354b01111771326f8aa26e0254\n"
)


@pytest.mark.parametrize("dockerfile, final", [f[1:] for f in FOLLOWED], ids=[f[0] for f in FOLLOWED])
def test_pip_is_followed_wherever_the_shell_runs_it(plan, dockerfile, final):
    planned = plan(dockerfile, **{"cap.txt": "six==1.16.0\n", "cap.lock": CAP_LOCK})
    # requests under --no-deps is broken (its own requirements are missing): what pip check says, not a blind step
    assert planned.final == final and planned.findings == [] and all(s.simulated for s in planned.steps)


def test_every_construct_the_planner_reads_is_fed_by_a_shape_above(tmp_path):
    """The constructs are the code's own: each name the scan and the shell walk mark a step with (`via`) is in their
    lists, and each listed one is reached by a Dockerfile above; every instruction with a rule is in one of them. A
    branch added without a shape here fails this test."""
    marks = [MARK.findall(Path(module.__file__).read_text()) for module in (recipe_steps, run_shell)]
    marked = {a or b for found in marks for a, b in found}
    listed = {*recipe_steps.SCOPE_BRANCHES, *run_shell.BRANCHES}
    assert marked == listed
    reached, instructions = set(), set()
    for _, dockerfile, _ in [*BLIND, *FOLLOWED]:
        (tmp_path / "Dockerfile").write_text(dockerfile)
        recipe = Recipe.load(tmp_path / "Dockerfile")
        instructions |= {ins.cmd for ins in recipe.instructions}
        reached |= {name for step in (*recipe.steps, *recipe.unsimulated) for name in step.via}
    assert listed - reached == set()
    assert set(recipe_steps.RULES) - instructions == set()
