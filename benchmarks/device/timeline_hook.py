"""A measurement aid for the engine's start (issue 53), never part of the image: installed into the staged venv by
`start-run.sh timeline` (a .pth line imports it into every Python process), it appends to /tmp/timeline.log each
process's start (pid, parent, command) and the moment it first asks for one of the modules below, so the seconds of
each Ray worker and child of the engine's start can be told apart. docs/h200/start/record.md, section 5c."""

import os
import sys
import time

LOG = "/tmp/timeline.log"
WATCH = {
    "megatron.core",
    "ray",
    "sglang",
    "sglang.srt.entrypoints.http_server",
    "sglang.srt.managers.detokenizer_manager",
    "sglang.srt.managers.scheduler",
    "sglang.srt.server_args",
    "slime.backends.megatron_utils",
    "slime.backends.sglang_utils.sglang_engine",
    "slime.backends.sglang_utils.slime_image_parallel_imports",
    "slime.ray.actor_group",
    "slime.ray.rollout",
    "torch",
    "torch_memory_saver",
    "transformer_engine",
}


def log(what: str) -> None:
    with open(LOG, "a") as out:
        out.write(f"{time.time():.2f} {os.getpid()} {os.getppid()} {what}\n")


class FirstImport:
    """Logs a watched module's first lookup and finds nothing itself, so the import goes on as it would."""

    def find_spec(self, name, path=None, target=None):
        if name in WATCH:
            log(f"import {name}")
        return None


log("start " + " ".join(sys.argv[:3])[:160])
sys.meta_path.insert(0, FirstImport())
