"""A GRPO launch recipe (kubernetes/launch/*.yaml), read once for the submitter and the renderer: the job's settings
(one slime flag each), the model's, its entrypoint and its runtime_env. Host side (PyYAML)."""

from __future__ import annotations

import difflib
from pathlib import Path

import yaml
from slime_image.errors import UserError

from tools import guard_report
from tools.inputs import pairings
from tools.inputs.recipe import ROOT
from tools.k8s import rollout_engines
from tools.release.build_check import record

DEFAULT = ROOT / "kubernetes" / "launch" / "qwen3-4b-grpo.yaml"
EXAMPLE = "see kubernetes/launch/qwen3-4b-grpo.yaml"


# The guards the recipe's own settings answer to, by the ids the reports and `make walls` name.
GUARDS = {"lower-case-log-level": ("W15",), "attention-backend-in-image": ("W37",), **rollout_engines.GUARDS}


def refused(cause: str, fix: str, guard: str | None = None) -> UserError:
    return guard_report.Refusal(guard, f"refused: {cause}", fix) if guard else UserError(f"refused: {cause}", fix)


# The recipe's sections. Each key of a flag section is one flag of the job's train.py, whichever section holds it.
FLAG_SECTIONS = ("settings", "model")
SECTIONS = ("ray_address", "entrypoint", "runtime_env", *FLAG_SECTIONS)


class _OneValueEach(yaml.SafeLoader):
    """YAML that gives a key twice in one mapping is refused: the plain loader keeps the later value unsaid."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                key = self.construct_object(key_node)
                if key in seen:
                    raise yaml.MarkedYAMLError(
                        problem=f"the key {key!r} is given twice in one mapping", problem_mark=key_node.start_mark
                    )
                seen.add(key)
        return super().construct_mapping(node, deep)


def load(path: Path) -> dict:
    """The recipe, with `entrypoint` a list of words and `flags` every flag of the job, from whichever section
    (`flags`: underscore name -> value, `origins`: underscore name -> where the recipe gives it); refused otherwise."""
    try:
        recipe = yaml.load(Path(path).read_text(), Loader=_OneValueEach)
    except (OSError, UnicodeError, yaml.YAMLError) as exc:
        mark = getattr(exc, "problem_mark", None)
        reason = f"line {mark.line + 1}: {exc.problem}" if mark else " ".join(str(exc).split())
        raise refused(
            f"cannot read the recipe {path}: {reason}", "pass --recipe with a readable YAML file, each key once"
        ) from None
    if not isinstance(recipe, dict) or not isinstance(recipe.get("settings"), dict):
        raise refused(f"{path} has no `settings` mapping", EXAMPLE)
    unknown = [str(key) for key in recipe if key not in SECTIONS]
    if unknown:
        raise refused(
            f"{path}: section {unknown[0]!r} is none the submitter reads, so what it holds would reach no job",
            f"use the sections {', '.join(SECTIONS)}",
        )
    for section in ("runtime_env", "model"):
        if recipe.get(section) is None:
            recipe[section] = {}
        if not isinstance(recipe[section], dict):
            raise refused(f"{path}: {section} is not a mapping", f"write {section}: as `name: value` lines; {EXAMPLE}")
    nested = [str(name) for name, value in recipe["runtime_env"].items() if isinstance(value, (dict, list))]
    if nested or not isinstance(recipe.get("ray_address", ""), str):
        what = f"runtime_env.{nested[0]}" if nested else "ray_address"
        raise refused(f"{what} in {path} is not one word: Ray would be given its Python spelling", EXAMPLE)
    entrypoint = recipe.setdefault("entrypoint", ["python3", "/opt/slime/train.py"])
    if not (isinstance(entrypoint, list) and entrypoint and all(isinstance(w, str) for w in entrypoint)):
        raise refused(
            f"entrypoint {entrypoint!r} in {path} is not a list of words (a string would reach Ray letter by letter)",
            "write it as a list: entrypoint: [python3, /opt/slime/train.py]",
        )
    script = next((i for i, word in enumerate(entrypoint) if word.endswith(".py")), len(entrypoint))
    passed = entrypoint[script + 1 :]
    if passed:
        raise refused(
            f"entrypoint in {path} passes {passed[0]} to {entrypoint[script]}: a flag there reaches the job unchecked",
            "give each flag as a key under settings: (attention_backend: auto), the program alone in entrypoint",
        )
    recipe["flags"], recipe["origins"] = {}, {}
    for section in FLAG_SECTIONS:
        for key, value in recipe[section].items():
            name = str(key).replace("-", "_")
            if name in recipe["origins"]:
                raise refused(
                    f"{section}.{key} gives --{name.replace('_', '-')} again, after {recipe['origins'][name]}: slime's "
                    "parser would silently take the later value",
                    "give each flag once, in one section",
                )
            recipe["flags"][name], recipe["origins"][name] = value, f"{section}.{key}"
    return recipe


def read(path: Path) -> dict:
    """The recipe `load` reads, its every flag checked once (`check`, `check_flags`), and what its rollout engines need
    of the job (rollout_engines): what the renderer and the submitter both use."""
    recipe = load(path)
    check(recipe["flags"])
    check_flags(recipe, *recorded_flags())
    if found := rollout_engines.findings(recipe):
        wall, cause, fix = found[0]
        raise refused(f"{cause} ({wall})", fix, rollout_engines.GUARD_OF[wall])
    return recipe


REQUIRED = (
    "actor_num_nodes",
    "actor_num_gpus_per_node",
    "hf_checkpoint",
    "prompt_data",
    "rollout_batch_size",
    "n_samples_per_prompt",
    "global_batch_size",
    "rollout_num_gpus_per_engine",
    "sglang_log_level",
)
INTEGERS = (
    "actor_num_nodes",
    "actor_num_gpus_per_node",
    "rollout_batch_size",
    "n_samples_per_prompt",
    "global_batch_size",
    "num_steps_per_rollout",
    "rollout_num_gpus_per_engine",
    "rollout_num_gpus",
    "tensor_model_parallel_size",
    *rollout_engines.SIZES,
)
LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")


def check(settings: dict) -> None:
    """The flags a job needs (`load`'s `flags`, from every section), as numbers where slime takes numbers, against
    the walls a setting alone causes."""
    missing = [k for k in REQUIRED if settings.get(k) in (None, "")]
    if missing:
        raise refused(f"required setting(s) missing: {', '.join(missing)}", "add them under `settings:` in the recipe")
    for key in INTEGERS:
        if key in settings and not (
            isinstance(settings[key], int) and not isinstance(settings[key], bool) and settings[key] > 0
        ):
            raise refused(f"{key}={settings[key]!r} is not a positive whole number", f"set {key} to a whole number")
    steps = settings.get("num_steps_per_rollout", 1)
    produced = settings["rollout_batch_size"] * settings["n_samples_per_prompt"]
    consumed = settings["global_batch_size"] * steps
    if produced != consumed:
        raise refused(
            f"GRPO batch invariant fails: rollout_batch_size x n_samples_per_prompt = {produced}, "
            f"but global_batch_size x num_steps_per_rollout = {consumed}",
            "make rollout_batch_size x n_samples_per_prompt equal global_batch_size x num_steps_per_rollout",
        )
    level = str(settings["sglang_log_level"])
    if level not in LOG_LEVELS:
        raise refused(
            f"sglang_log_level={level!r}: uvicorn knows only lower-case levels, the rollout server would never bind",
            f"use one of {', '.join(LOG_LEVELS)}",
            guard="lower-case-log-level",
        )
    if settings.get("attention_backend") == "flash":
        raise refused(
            "attention_backend=flash: TransformerEngine's flash backend needs flash-attn 2 or 3, which the image does "
            "not carry, so the first train step fails (W37)",
            "set attention_backend: auto (TransformerEngine picks cuDNN's fused attention)",
            guard="attention-backend-in-image",
        )
    gpus = settings["actor_num_gpus_per_node"]
    for key in ("tensor_model_parallel_size", "rollout_num_gpus_per_engine"):
        if key in settings and gpus % settings[key]:
            raise refused(
                f"{key}={settings[key]} does not divide actor_num_gpus_per_node={gpus}", f"choose a divisor of {gpus}"
            )


def value_problem(value, spec: dict) -> str | None:
    """Why slime's parser would refuse `value` for a flag of this kind, or None."""
    kind, choices = spec["type"], spec.get("choices")
    if kind == "flag":
        return None if isinstance(value, bool) else "is a switch: true or false"
    if isinstance(value, dict) or value == []:
        return "takes words, not a mapping or an empty list (the flag would reach the job with no value)"
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, bool) and kind != "other":
            return f"takes {kind} values, not true/false"
        try:
            {"int": int, "float": float}.get(kind, str)(str(item))
        except ValueError:
            return f"takes {'a whole number' if kind == 'int' else 'a number'}, not {item!r}"
        if choices and str(item) not in choices:
            return f"takes one of {', '.join(choices)}, not {item!r}"
    return None


def recorded_flags() -> tuple[dict[str, dict] | None, str]:
    """The flags of the default pairing's slime, as its verification build recorded them, and where they are."""
    pairing = pairings.default()
    path = record.folder_for(pairing) / record.SLIME_FLAGS
    return record.slime_flags(pairing), str(path.relative_to(ROOT))


def check_flags(recipe: dict, flags: dict[str, dict] | None, where: str) -> None:
    """Every flag of the recipe (`load`'s `flags`) is one slime's train.py accepts, with a value it takes (`flags` as
    the verification build recorded them; None: no record, nothing to check against)."""
    if flags is None:
        return
    for name, value in recipe["flags"].items():
        flag, origin = "--" + name.replace("_", "-"), recipe["origins"][name]
        if flag not in flags:
            near = difflib.get_close_matches(flag, flags, n=1)
            hint = f" (did you mean {near[0][2:].replace('-', '_')}?)" if near else ""
            raise refused(
                f"{origin}: slime's train.py has no {flag}{hint}", f"use the flags slime accepts, as {where} lists them"
            )
        if value is not None and value is not False and (problem := value_problem(value, flags[flag])):
            raise refused(f"{origin}={value!r}: {flag} {problem}", f"give {name} a value {flag} takes")


if __name__ == "__main__":
    from tools import library_module

    raise SystemExit(library_module(__spec__.name))
