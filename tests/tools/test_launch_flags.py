"""Every flag the job gets goes through one check, once, whatever section of the launch recipe gives it (issue 40):
the renderer and the submitter read the recipe through `launch_recipe.read`, so a guard's key under `model:`, a key
spelled with dashes, a key given twice in one mapping or in two sections, and a flag hidden in the entrypoint are
judged as a setting is. Before, each of these reached the job: slime's parser took the later value of a flag given
twice, after the allowed one the checks had seen. Both commands run in this process (in_process.tool): test_grpo_submit
runs the submitter as a process, test_host_bad_input the renderer."""

import json
import os
import sys

import pytest
import yaml
from conftest import IMAGE_BIN
from in_process import tool
from test_cluster_shape import render
from test_grpo_submit import stand_ins  # noqa: F401 (a fixture: the stand-in ray and train.py)
from test_host_bad_input import assert_refused

from tools.k8s import launch_recipe

SHIPPED = launch_recipe.DEFAULT.read_text()


def written(tmp_path, text: str):
    path = tmp_path / "recipe.yaml"
    path.write_text(text)
    return path


def with_sections(tmp_path, change):
    recipe = yaml.safe_load(SHIPPED)
    recipe["entrypoint"] = [sys.executable, str(tmp_path / "train.py")]
    change(recipe)
    return written(tmp_path, yaml.safe_dump(recipe, sort_keys=False))


def moved_to_model(key, value):
    def change(recipe):
        del recipe["settings"][key]
        recipe["model"][key] = value

    return change


def submit(recipe_path, folder):
    """test_grpo_submit's submit: the image's commands on PATH, the stand-in ray to submit through."""
    env = {"PYTHONPATH": "", "PATH": f"{IMAGE_BIN}:{os.environ['PATH']}"}
    return tool("tools.k8s.grpo_submit", "--recipe", str(recipe_path), "--", str(folder / "ray"), env=env)


def refused_everywhere(tmp_path, path, cause, fix=""):
    """The submitter and the renderer refuse the same recipe the same way, and nothing reaches Ray."""
    assert_refused(submit(path, tmp_path), "submit", cause, fix)
    assert not (tmp_path / "ray-args.json").exists()
    proc, out = render(tmp_path, LAUNCH_RECIPE=str(path))
    assert_refused(proc, "render", cause, fix)
    assert not out.exists()


@pytest.mark.guard_fails("submit:attention-backend-in-image")
@pytest.mark.usefixtures("stand_ins")
def test_w37_holds_under_model(tmp_path):
    path = with_sections(tmp_path, moved_to_model("attention_backend", "flash"))
    refused_everywhere(tmp_path, path, "attention_backend=flash: TransformerEngine's flash backend", "auto")


@pytest.mark.guard_fails("submit:lower-case-log-level")
@pytest.mark.usefixtures("stand_ins")
def test_w15_holds_under_model(tmp_path):
    path = with_sections(tmp_path, moved_to_model("sglang_log_level", "INFO"))
    refused_everywhere(tmp_path, path, "sglang_log_level='INFO': uvicorn knows only lower-case levels")


@pytest.mark.guard_fails("submit:attention-backend-in-image")
@pytest.mark.usefixtures("stand_ins")
def test_w37_holds_for_a_key_spelled_with_dashes(tmp_path):
    def change(recipe):
        del recipe["settings"]["attention_backend"]
        recipe["settings"]["attention-backend"] = "flash"

    refused_everywhere(tmp_path, with_sections(tmp_path, change), "attention_backend=flash")


@pytest.mark.usefixtures("stand_ins")
def test_a_flag_given_in_two_sections_is_refused(tmp_path):
    path = with_sections(tmp_path, lambda recipe: recipe["model"].update(attention_backend="flash"))
    refused_everywhere(
        tmp_path,
        path,
        "model.attention_backend gives --attention-backend again, after settings.attention_backend",
        "give each flag once, in one section",
    )


@pytest.mark.usefixtures("stand_ins")
def test_a_key_given_twice_in_one_mapping_is_refused(tmp_path):
    text = SHIPPED.replace("  attention_backend: auto\n", "  attention_backend: auto\n  attention_backend: flash\n")
    text = text.replace("[python3, /opt/slime/train.py]", json.dumps([sys.executable, str(tmp_path / "train.py")]))
    path = written(tmp_path, text)
    line = text.splitlines().index("  attention_backend: flash") + 1
    refused_everywhere(
        tmp_path,
        path,
        f"line {line}: the key 'attention_backend' is given twice in one mapping",
        "each key once",
    )


@pytest.mark.usefixtures("stand_ins")
def test_a_section_given_twice_is_refused(tmp_path):
    path = written(tmp_path, SHIPPED + "settings:\n  attention_backend: flash\n")
    refused_everywhere(tmp_path, path, "the key 'settings' is given twice in one mapping")


@pytest.mark.usefixtures("stand_ins")
def test_a_flag_in_the_entrypoint_is_refused(tmp_path):
    def change(recipe):
        recipe["entrypoint"] += ["--attention-backend", "flash"]

    refused_everywhere(
        tmp_path, with_sections(tmp_path, change), "passes --attention-backend to", "a key under settings:"
    )


@pytest.mark.usefixtures("stand_ins")
def test_a_section_nothing_reads_is_refused(tmp_path):
    path = with_sections(tmp_path, lambda recipe: recipe.update(modle={"attention_backend": "flash"}))
    refused_everywhere(tmp_path, path, "section 'modle' is none the submitter reads", "model")


@pytest.mark.parametrize(
    "where, value, cause",
    [
        ("settings", [], "settings.lr=[]: --lr takes words, not a mapping or an empty list"),
        ("settings", {"value": 1}, "--lr takes words, not a mapping"),
        ("model", "1e-6x", "model.lr='1e-6x': --lr takes a number"),
    ],
)
@pytest.mark.usefixtures("stand_ins")
def test_a_value_slimes_parser_refuses_is_refused_in_any_section(tmp_path, where, value, cause):
    def change(recipe):
        del recipe["settings"]["lr"]
        recipe[where]["lr"] = value

    refused_everywhere(tmp_path, with_sections(tmp_path, change), cause, "give lr a value --lr takes")


@pytest.mark.usefixtures("stand_ins")
def test_a_whole_number_under_model_is_checked_as_a_setting(tmp_path):
    path = with_sections(tmp_path, moved_to_model("tensor_model_parallel_size", 3))
    refused_everywhere(tmp_path, path, "tensor_model_parallel_size=3 does not divide actor_num_gpus_per_node")


@pytest.mark.usefixtures("stand_ins")
def test_each_flag_reaches_the_job_once_whatever_its_section(tmp_path):
    path = with_sections(tmp_path, moved_to_model("attention_backend", "auto"))
    proc = submit(path, tmp_path)
    assert proc.returncode == 0, proc.stderr
    received = json.loads((tmp_path / "train-args.json").read_text())
    assert received.count("--attention-backend") == 1
    assert received[received.index("--attention-backend") + 1] == "auto"


@pytest.mark.usefixtures("stand_ins")
@pytest.mark.parametrize(
    "change, cause",
    [
        (lambda recipe: recipe["runtime_env"].update(X={"a": 1}), "runtime_env.X in"),
        (lambda recipe: recipe.update(ray_address=["http://127.0.0.1:8265"]), "ray_address in"),
    ],
)
def test_a_setting_that_is_not_one_word_is_refused(tmp_path, change, cause):
    refused_everywhere(tmp_path, with_sections(tmp_path, change), cause, "see kubernetes/launch/qwen3-4b-grpo.yaml")
