"""Every command's messages say one program name (sweep 6 U17, SWEEP4 #20's naming): a Ctrl-C to `make plan` said
`-m: interrupted` while Python found the module (sys.argv[0] is "-m" then), `tools.planner.plan: interrupted` while
the module loaded, and `plan: ...` once it ran. The members: every command of tools.COMMANDS, run as `python -m`
runs it, stopped by a real SIGINT at each of the two points (sent by an audit hook of the test's own sitecustomize,
a stand-in for a user's Ctrl-C at that moment), and its own refusal of an option, which run_command names."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from conftest import ROOT, default_sigint

import tools

# Sent when the entry point imports slime_image.errors (its hook not yet in place: the signal is held and raised once it
# is, with argv[0] "-m"), or when Python starts the module's own code (its __spec__ set, argv[0] its path).
SITECUSTOMIZE = """
import os, signal, sys
_at, _done = os.environ.get("STOP_AT"), []
def _stop(event, args):
    module_code = event == "exec" and getattr(args[0], "co_filename", "").endswith(os.environ["STOP_FILE"])
    if not _done and ((event == "import" and args[0] == _at) or (_at == "exec" and module_code)):
        _done.append(event)
        os.kill(os.getpid(), signal.SIGINT)
if _at:
    sys.addaudithook(_stop)
"""
POINTS = ("slime_image.errors", "exec")
# How many run at once: all of them started together (three a command) took both cores from the suite's other workers
# for seconds, and every one of them started slower for it.
AT_ONCE = 6


def test_every_command_says_one_name_wherever_it_is_stopped(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    env["PYTHONPATH"] = f"{tmp_path}:{ROOT}:{ROOT / 'image'}"
    running, ended = [], {}

    def end_oldest():
        case, proc = running.pop(0)
        said = proc.communicate(timeout=300)[1]
        ended[case] = proc.returncode, said.strip().splitlines()

    for module in tools.COMMANDS:
        file = module.replace(".", "/") + ".py"
        for point in (*POINTS, "--no-such-option"):
            if len(running) == AT_ONCE:
                end_oldest()
            stop = {"STOP_AT": point, "STOP_FILE": file} if point in POINTS else {}
            argv = [sys.executable, "-m", module, *([point] if point not in POINTS else [])]
            proc = subprocess.Popen(
                argv,
                cwd=ROOT,
                env=env | stop,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                preexec_fn=default_sigint,
            )
            running.append(((module, point), proc))
    while running:
        end_oldest()
    assert len(ended) == 3 * len(tools.COMMANDS)
    wrong = []
    for (module, point), (code, said) in ended.items():
        name = tools.COMMANDS[module]
        if point in POINTS:
            # 130, or ended by the SIGINT itself, as Python ends a run whose KeyboardInterrupt reached the top
            right = code in (130, -signal.SIGINT) and said == [
                f"{name}: interrupted: nothing it was writing was kept",
                "fix: run it again",
            ]
        else:
            right = code != 0 and len(said) == 2 and said[0].startswith(f"{name}: ")
        if not right:
            wrong.append(f"{module} at {point}: exit {code}, {said[-2:]}")
    assert wrong == []
