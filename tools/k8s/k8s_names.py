"""Every name the manifests give Kubernetes, checked by the rule Kubernetes (or KubeRay) applies to its kind, and a
refusal that names the setting it came from: the API server would refuse the object only at `kubectl apply`, after
the render said nothing, and a name too long for a label fails later still, at the Job's pods.

The names are found where the templates put them (metadata, the references to a Secret or a claim, a Pod's subdomain)
and, derived by Kubernetes, the host names of an Indexed Job's pods; each checked rendered, with the settings its
template text names.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import yaml
from slime_image.errors import UserError


@dataclass(frozen=True)
class Rule:
    what: str
    pattern: re.Pattern
    most: int


LABEL_TEXT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
LABEL = Rule("a DNS-1123 label (lower-case letters, digits, -)", re.compile(LABEL_TEXT), 63)
SUBDOMAIN = Rule(
    "a DNS-1123 subdomain (lower-case letters, digits, - and .)", re.compile(rf"{LABEL_TEXT}(\.{LABEL_TEXT})*"), 253
)
# A Service's name (and so a RayCluster's) starts with a letter: it becomes a DNS name of the cluster.
DNS1035 = Rule(
    "a DNS-1035 label (a lower-case letter first, then letters, digits, -)",
    re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?"),
    63,
)
# A Job's name is a subdomain, but it is also the value of the job-name label of its pods: 63 at most.
JOB = Rule(SUBDOMAIN.what, SUBDOMAIN.pattern, 63)
# KubeRay refuses a RayCluster name over 53 characters, which keeps its longest Service, <name>-serve-svc, within 63
# (ray-operator utils: MaxRayClusterNameLength, ValidateRayClusterMetadata).
RAYCLUSTER = Rule(DNS1035.what, DNS1035.pattern, 53)
BY_KIND = {"RayCluster": RAYCLUSTER, "Job": JOB, "Service": DNS1035, "Namespace": LABEL}


def _referenced(node, where: str) -> Iterator[tuple[str, object, Rule]]:
    """The names a manifest's body holds: a Pod's subdomain and host name, each Secret and claim it refers to."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("subdomain", "hostname"):
                yield f"{where}.{key}", value, LABEL
            elif key in ("secretKeyRef", "secretRef") and isinstance(value, dict) and "name" in value:
                yield f"{where}.{key}.name", value["name"], SUBDOMAIN
            elif key in ("claimName", "secretName"):
                yield f"{where}.{key}", value, SUBDOMAIN
            else:
                yield from _referenced(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _referenced(item, f"{where}[{i}]")


def names(document: dict) -> Iterator[tuple[str, object, Rule]]:
    """(where, name, rule) for every name in one manifest, the names Kubernetes derives from them included."""
    meta = document.get("metadata", {})
    kind = document.get("kind", "")
    yield "metadata.name", meta.get("name"), BY_KIND.get(kind, SUBDOMAIN)
    if "namespace" in meta:
        yield "metadata.namespace", meta["namespace"], LABEL
    yield from _referenced(document.get("spec", {}), "spec")
    spec = document.get("spec", {})
    if kind == "Job" and spec.get("completionMode") == "Indexed":  # each pod's host name: <job>-<index>
        last = int(spec.get("completions", 1)) - 1
        yield "pod host name", f"{meta.get('name')}-{last}", LABEL


def problem(name: object, rule: Rule) -> str | None:
    text = str(name)
    if len(text) > rule.most:
        return f"is {len(text)} characters, {rule.most} at most"
    if not rule.pattern.fullmatch(text):
        return f"is not {rule.what}"
    return None


def _room(written: str, rule: Rule, values: dict[str, str]) -> str:
    """How long the one setting in `written` may be, with what the template adds around it; empty for several."""
    settings = set(re.findall(r"\$\{([A-Z_][A-Z0-9_]*)\}", written))
    if len(settings) != 1:
        return ""
    setting = settings.pop()
    times = written.count(f"${{{setting}}}")
    added = len(written) - times * len(f"${{{setting}}}")
    return f" ({setting}: {(rule.most - added) // times} characters at most here)"


def check(template_text: str, rendered_text: str, template: str, values: dict[str, str]) -> None:
    """Refuse the first name of the rendered manifests Kubernetes would not take, naming the settings (the ${NAME}s
    its template text holds) it came from."""
    pairs = zip(yaml.safe_load_all(template_text), yaml.safe_load_all(rendered_text), strict=True)
    for source, rendered in pairs:
        if not isinstance(rendered, dict):
            continue
        for (where, written, _), (_, name, rule) in zip(names(source), names(rendered), strict=True):
            wrong = problem(name, rule)
            if wrong is None:
                continue
            settings = sorted(set(re.findall(r"\$\{([A-Z_][A-Z0-9_]*)\}", str(written))))
            shown = ", ".join(settings) or f"templates/{template}.yaml"
            given = ", ".join(f"{s}={values.get(s)!r}" for s in settings) or "the template"
            raise UserError(
                f"{given} makes the "
                f"{rendered.get('kind')} {where} {str(name)!r} (templates/{template}.yaml), which {wrong}: "
                "Kubernetes would refuse it",
                f"set {shown} so that it is {rule.what}{_room(str(written), rule, values)}",
            )
