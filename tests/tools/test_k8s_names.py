"""Names Kubernetes accepts, and only those (issue 46, item 7): every name the templates render, the ones Kubernetes
derives from them included, checked by its kind's rule, the setting that made it named; settings.env sets each
name once."""

import re

import pytest
import yaml
from slime_image.errors import UserError
from test_k8s import USER, rendered

from tools.k8s import k8s_names, k8s_render


@pytest.mark.parametrize(
    "name, rule, good",
    [
        ("hf.token", k8s_names.SUBDOMAIN, True),
        ("fsx-lustre.claim-1", k8s_names.SUBDOMAIN, True),
        ("a" * 253, k8s_names.SUBDOMAIN, True),
        ("a" * 254, k8s_names.SUBDOMAIN, False),
        ("hf..token", k8s_names.SUBDOMAIN, False),
        ("Hf-token", k8s_names.SUBDOMAIN, False),
        ("a.b", k8s_names.LABEL, False),
        ("a" * 63, k8s_names.LABEL, True),
        ("a" * 64, k8s_names.LABEL, False),
        ("-a", k8s_names.LABEL, False),
        ("9lives", k8s_names.LABEL, True),
        ("9lives", k8s_names.DNS1035, False),
        ("a" * 63, k8s_names.JOB, True),
        ("a" * 64, k8s_names.JOB, False),
        ("a" * 53, k8s_names.RAYCLUSTER, True),
        ("a" * 54, k8s_names.RAYCLUSTER, False),
    ],
)
def test_each_rule_is_the_one_kubernetes_applies(name, rule, good):
    assert (k8s_names.problem(name, rule) is None) is good


def settings_named(template: str) -> dict[str, int]:
    """Each user setting the template's names hold -> the longest value every one of those names takes."""
    room: dict[str, int] = {}
    for document in yaml.safe_load_all((k8s_render.K8S / "templates" / f"{template}.yaml").read_text()):
        for _, written, rule in k8s_names.names(document):
            for setting in set(re.findall(r"\$\{([A-Z_]+)\}", str(written))):
                times = str(written).count(f"${{{setting}}}")
                most = (rule.most - (len(str(written)) - times * len(f"${{{setting}}}"))) // times
                room[setting] = min(room.get(setting, most), most)
    return room


def test_the_names_are_found_where_the_templates_put_them():
    """Each template's names: the settings that make them, and the derived host names of the Indexed Job."""
    found = {t: settings_named(t) for t in k8s_render.TEMPLATES}
    assert found["raycluster"] == {"CLUSTER_NAME": 53, "NAMESPACE": 63, "HF_TOKEN_SECRET": 253, "FSX_CLAIM": 253}
    assert found["preflight-p2p"] == {"CLUSTER_NAME": 57, "NAMESPACE": 63}  # <name>-p2p-1, a pod's host name
    assert found["data-prep-job"]["CLUSTER_NAME"] == 53  # <name>-data-prep, a Job: 63 at most


@pytest.mark.parametrize(
    "template, setting, room",
    [(t, s, r) for t in k8s_render.TEMPLATES for s, r in settings_named(t).items()],
)
def test_every_name_refuses_a_value_one_too_long_naming_its_setting(template, setting, room):
    text = (k8s_render.K8S / "templates" / f"{template}.yaml").read_text()
    values = {**USER, "CLUSTER_NAME": "slime", "HF_TOKEN_SECRET": "hf-token"}

    def check(value: str) -> None:
        given = {**values, setting: value}
        filled = k8s_render.TOKEN.sub(lambda m: given.get(m.group(1), m.group(0)), text)
        k8s_names.check(text, filled, template, given)

    check("a" * room)
    with pytest.raises(UserError) as caught:
        check("a" * (room + 1))
    assert caught.value.cause.startswith(f"{setting}='{'a' * (room + 1)}' makes the ")
    assert caught.value.fix.startswith(f"set {setting} so that it is ")
    assert f"({setting}: {room} characters at most here)" in caught.value.fix


def test_a_63_character_cluster_name_is_refused_and_a_53_character_one_renders():
    with pytest.raises(UserError, match=r"CLUSTER_NAME='a{63}' makes the RayCluster metadata\.name"):
        rendered(CLUSTER_NAME="a" * 63)
    assert f"name: {'a' * 53}-data-prep" in rendered(CLUSTER_NAME="a" * 53).replace('"', "")


def test_a_secret_or_claim_name_with_a_dot_is_a_valid_subdomain():
    text = rendered(HF_TOKEN_SECRET="hf.token", FSX_CLAIM="fsx.lustre-claim")
    assert 'name: "hf.token"' in text and 'claimName: "fsx.lustre-claim"' in text


@pytest.mark.parametrize(
    "changes, cause",
    [
        ({"NAMESPACE": "slime.ns"}, "NAMESPACE='slime.ns' makes the RayCluster metadata.namespace"),
        ({"CLUSTER_NAME": "1slime"}, "is not a DNS-1035 label"),
        ({"FSX_CLAIM": "fsx_lustre"}, "FSX_CLAIM='fsx_lustre' makes the RayCluster spec.headGroupSpec"),
        ({"HF_TOKEN_SECRET": "hf token"}, "HF_TOKEN_SECRET='hf token' makes the RayCluster spec.headGroupSpec"),
        ({"NAMESPACE": 'a"b'}, "NAMESPACE='a\"b' makes"),
    ],
)
def test_a_name_kubernetes_would_refuse_is_refused_naming_its_setting(changes, cause):
    with pytest.raises(UserError) as caught:
        rendered(**changes)
    assert cause in caught.value.cause and caught.value.cause.endswith("Kubernetes would refuse it")


def test_get_answers_only_for_a_name_the_render_would_take():
    with pytest.raises(UserError, match="NAMESPACE='a b'"):
        k8s_render.values_for("b300", {**USER, "NAMESPACE": "a b"}, None)


def test_a_setting_given_twice_in_the_settings_file_is_refused(tmp_path):
    settings = tmp_path / "settings.env"
    settings.write_text("NAMESPACE=slime\nNUM_NODES=2\nexport NAMESPACE=other\n")
    with pytest.raises(UserError) as caught:
        k8s_render.read_env_file(settings)
    assert caught.value.cause == f"{settings}:3: NAMESPACE is set again (first at line 1)"
    assert caught.value.fix == "keep one NAMESPACE= line"
    settings.write_text("NAMESPACE=other\nNUM_NODES=2\n")
    assert k8s_render.read_env_file(settings) == {"NAMESPACE": "other", "NUM_NODES": "2"}
