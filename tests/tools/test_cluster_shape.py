"""The cluster's shape, checked before anything is rendered or submitted (issue 31): an image reference every node pulls
the same way, as many nodes as the job uses, GPUs per node the instance type has, and an entrypoint that is a list.
Each case rendered or submitted before; now it ends in two lines (cause, fix), a non-zero exit and nothing written.
The commands run in this process (in_process.tool): test_host_bad_input runs the renderer's refusals as a process,
test_grpo_submit the submitter's."""

import pytest
import yaml
from in_process import tool
from test_host_bad_input import USER, assert_refused

from tools.k8s import cluster_shape, launch_recipe

RENDER = ("tools.k8s.k8s_render", "--overlay", "h200")


def render(tmp_path, **changes):
    out = tmp_path / "rendered.yaml"
    proc = tool(*RENDER, "--out", str(out), env={**USER, **changes}, drop=USER)
    return proc, out


@pytest.mark.parametrize(
    "image",
    [
        "123456789012.dkr.ecr.us-west-2.amazonaws.com/slime-image@sha256:" + "0" * 64,
        "localhost:5000/slime-image@sha256:" + "0" * 64,
        "registry.example.com/team/slime-image:v1@sha256:" + "a" * 64,
    ],
)
def test_a_reference_with_registry_and_tag_or_digest_passes(image):
    cluster_shape.check_image(image)


@pytest.mark.parametrize(
    "changes, cause, fix",
    [
        (
            {"IMAGE": "slime-image:v0.3.1"},
            "IMAGE='slime-image:v0.3.1' names no registry: nodes would look for it on Docker Hub",
            "set IMAGE to the reference `make push` printed",
        ),
        (
            {"IMAGE": "123456789012.dkr.ecr.us-west-2.amazonaws.com/slime-image"},
            "IMAGE='123456789012.dkr.ecr.us-west-2.amazonaws.com/slime-image' has no digest: nodes would pull :latest",
            "set IMAGE to the reference `make push` printed",
        ),
        (
            {"NUM_NODES": "1000"},
            "refused: NUM_NODES=1000, and the job uses 2 GPU node(s): 998 would idle, paid for",
            "set NUM_NODES=2",
        ),
        (
            {"NUM_NODES": "1"},
            "refused: the job uses 2 GPU node(s) and the RayCluster has NUM_NODES=1: Ray would wait forever",
            "set NUM_NODES=2",
        ),
    ],
)
def test_an_image_or_node_count_the_job_cannot_use_is_refused(tmp_path, changes, cause, fix):
    proc, out = render(tmp_path, **changes)
    assert_refused(proc, "render", cause, fix)
    assert not out.exists()


def recipe_with(tmp_path, **settings):
    recipe = yaml.safe_load(launch_recipe.DEFAULT.read_text())
    recipe.update(settings.pop("top", {}))
    recipe["settings"].update(settings)
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe))
    return str(path)


def submit(recipe, *args):
    return tool("tools.k8s.grpo_submit", "--recipe", recipe, "--overlay", "h200", "--dry-run", *args, drop=USER)


def test_more_gpus_per_node_than_the_instance_type_has_is_refused(tmp_path):
    proc = submit(recipe_with(tmp_path, actor_num_gpus_per_node=16))
    assert_refused(
        proc, "submit", "actor_num_gpus_per_node=16, but a p5en.48xlarge node has 8 GPUs", "actor_num_gpus_per_node: 8"
    )
    proc, _ = render(tmp_path, LAUNCH_RECIPE=recipe_with(tmp_path, actor_num_gpus_per_node=16))
    assert_refused(proc, "render", "actor_num_gpus_per_node=16")


def test_the_submitter_compares_the_clusters_nodes_with_the_job(tmp_path):
    recipe = recipe_with(tmp_path)
    assert_refused(submit(recipe, "--num-nodes", "3"), "submit", "NUM_NODES=3, and the job uses 2 GPU node(s)")
    assert submit(recipe, "--num-nodes", "2").returncode == 0


def test_rollout_on_nodes_of_its_own_adds_them(tmp_path):
    recipe = recipe_with(tmp_path, colocate=False, rollout_num_gpus=16)
    assert submit(recipe, "--num-nodes", "4").returncode == 0
    assert_refused(submit(recipe, "--num-nodes", "2"), "submit", "the job uses 4 GPU node(s)")


def test_a_string_entrypoint_is_refused_not_split_into_letters(tmp_path):
    proc = submit(recipe_with(tmp_path, top={"entrypoint": "python3 /opt/slime/train.py"}))
    assert_refused(
        proc,
        "submit",
        "entrypoint 'python3 /opt/slime/train.py' in",
        "write it as a list: entrypoint: [python3, /opt/slime/train.py]",
    )
    assert proc.stdout == ""


# The recipe's keys and values against the flags slime's train.py accepts, as the verification build recorded them
# from slime's own parsers in the built image (docs/build/<pairing>/slime-flags.json).


@pytest.mark.parametrize(
    "setting, cause",
    [
        ({"colocat": True}, "settings.colocat: slime's train.py has no --colocat (did you mean colocate?)"),
        ({"lr": "abc"}, "settings.lr='abc': --lr takes a number, not 'abc'"),
        ({"num_rollout": 2.5}, "settings.num_rollout=2.5: --num-rollout takes a whole number, not 2.5"),
        ({"attention_backend": "flashy"}, "--attention-backend takes one of auto, flash, fused, local, unfused"),
        ({"colocate": "yes"}, "settings.colocate='yes': --colocate is a switch: true or false"),
    ],
)
def test_a_key_or_value_slimes_parser_would_refuse_is_refused_before_submitting(tmp_path, setting, cause):
    proc = submit(recipe_with(tmp_path, **setting))
    assert_refused(proc, "submit", cause, "slime-flags.json" if "has no" in cause else "")
    proc, out = render(tmp_path, LAUNCH_RECIPE=recipe_with(tmp_path, **setting))
    assert_refused(proc, "render", cause)
    assert not out.exists()


def test_the_shipped_recipe_uses_only_flags_slime_accepts():
    recipe = launch_recipe.load(launch_recipe.DEFAULT)
    flags, where = launch_recipe.recorded_flags()
    assert flags and len(flags) > 1000, where  # slime's, SGLang's and Megatron's parsers, not one of them
    launch_recipe.check_flags(recipe, flags, where)


ECR = "123456789012.dkr.ecr.us-west-2.amazonaws.com"


# Each way a reference with a registry misses the grammar, with the words its cause says (sweep 7 U4: each was "names no
# registry", the ECR host in it; a comment after the value was told a fix the next run refused).
MISSES = {
    f"{ECR}/slime@sha256:aaaaaaaaaa": "has the digest 'sha256:aaaaaaaaaa', which is no sha256:<64 lower-case hex",
    f"{ECR}/slime@sha256:{'A' * 64}": "which is no sha256:<64 lower-case hex digits>",
    f"{ECR}/slime@sha256:{'a' * 64}$(id)": "which is no sha256:<64 lower-case hex digits>",
    f"{ECR}/Slime@sha256:{'a' * 64}": "names the repository 'Slime': a repository name is lower-case",
    f"{ECR}/team/Slime-Image:v1": "names the repository 'team/Slime-Image'",
    f"{ECR}/slime:-v1": "has the tag '-v1'",
    f"{ECR}/slime@sha256:{'a' * 64} # pushed today": "holds a space, a quote, a # or a control character",
    f"{ECR}/sl\x1bime": "holds a space, a quote, a # or a control character",
    f"{ECR}/{'a' * 300}@sha256:{'a' * 64}": "is longer than the 255 characters of a name",
    "": "is empty",
}


@pytest.mark.parametrize("image", MISSES)
def test_an_image_reference_that_misses_the_grammar_is_refused_for_its_own_cause(image):
    with pytest.raises(cluster_shape.UserError) as refused:
        cluster_shape.check_image(image)
    cause = refused.value.cause
    assert cause.startswith(f"IMAGE={image!r} ") and MISSES[image] in cause, cause
    assert "Docker Hub" not in refused.value.cause
