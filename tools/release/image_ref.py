"""Image references by the grammar docker, podman and buildah share (distribution's reference package), and the base a
build may be given instead of the Dockerfile's: the same CUDA major on the same Ubuntu release, or a stand-in that says
it is one. A base of another CUDA would build an image whose pairing tag, fingerprint and record claim the pairing's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from slime_image.errors import UserError
from slime_image.fetch import CONTROL, HEX
from slime_image.quoted import cut, quoted

from tools.inputs import url_form

_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN_PART = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_PART}(?:\.{_DOMAIN_PART})*|\[[0-9a-fA-F:.]+\])(?::[0-9]+)?"
REFERENCE = re.compile(
    rf"(?:(?P<domain>{_DOMAIN})/)?(?P<path>{_COMPONENT}(?:/{_COMPONENT})*)"
    # the digest by the OCI image spec: a lower-case algorithm, then its encoded value
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?(?:@(?P<digest>[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]+))?"
)
# A CUDA image's tag (nvidia/cuda:13.0.2-devel-ubuntu24.04): its CUDA release, and the Ubuntu it is built on.
CUDA_TAG = re.compile(r"(?P<major>\d+)\.\d+(?:\.\d+)?-(?:[\w.]+-)*ubuntu(?P<ubuntu>\d+\.\d+)")
# The verification build's stand-in base: on this machine's registry, named as one (build_check/run.py), CUDA in tag.
STANDIN = re.compile(r"localhost(?::[0-9]+)?")


@dataclass(frozen=True)
class Reference:
    domain: str | None
    path: str
    tag: str | None
    digest: str | None


def shown(text: str) -> str:
    """An image reference as a message may say it: everything before an '@' that opens no digest as *** (a
    USER:PASSWORD@, which no engine takes there: the registry's credentials go to its login)."""
    return re.sub(r"^.*@(?!sha256:)", "***@", text)


def said(text: str) -> str:
    """An image reference as a message quotes it: shown(), each value after a '?' or '#' as *** as a URL's are (no
    reference holds one: a URL's token pasted with it), then quoted(), cut with its length said (sweep 14 W10:
    --against printed a password, a query's token and 3000 characters whole)."""
    return quoted(url_form.shown(shown(text)))


def port_problem(domain: str | None) -> str | None:
    """Why a registry's HOST:PORT names no port a registry listens on, or None: the grammar takes any digits, and an
    engine took port 0 (sweep 12 W2: `make build IMAGE=reg.example:0/slime` printed its command)."""
    port = re.search(r":([0-9]+)$", domain or "")
    if port and int(port[1]) == 0:
        return "names the registry's port 0, which no server listens on (a port is 1 to 65535)"
    if port and int(port[1]) > 65535:
        return f"names the registry's port {cut(port[1], 20)}, past 65535, the highest port"
    return None


def has_userinfo(text: str) -> bool:
    """`text` holds an '@' that opens no digest: a USER:PASSWORD@ before the registry."""
    return shown(text) != text


def parse(text: str) -> Reference | None:
    """The reference `text` is, by the grammar, or None. A first component is a registry when it holds `.` or `:`
    or is localhost, as the engines read it; a sha256 digest has 64 lower-case hex digits."""
    found = REFERENCE.fullmatch(text)
    if found is None:
        return None
    domain, path = found["domain"], found["path"]
    if port_problem(domain):
        return None
    if domain and not ("." in domain or ":" in domain or domain == "localhost"):
        path, domain = f"{domain}/{path}", None
        if not re.fullmatch(_COMPONENT, path.split("/")[0]):
            return None
    if len(f"{domain}/{path}" if domain else path) > 255:
        return None
    digest = found["digest"]
    if digest and digest.startswith("sha256:") and not HEX.fullmatch(digest.removeprefix("sha256:")):
        return None
    return Reference(domain, path, found["tag"], digest)


def problem(text: str) -> str | None:
    """Why `text` is no reference (parse's None), in words that name the part at fault; None for a reference. Every
    miss was "names no registry" for IMAGE, an ECR host in it (sweep 7 U4: a short digest, an upper-case name)."""
    if parse(text) is not None:
        return None
    if not text:
        return "is empty"
    if (found := REFERENCE.fullmatch(text)) and (why := port_problem(found["domain"])):
        return why
    if re.search(r"[\s\"'#]", text) or CONTROL.search(text):
        return "holds a space, a quote, a # or a control character (a comment goes on a line of its own)"
    if text.startswith("-"):
        return "begins with '-', as no reference does: an engine given it would read an option"
    # Each part named quoted (redacted, cut): a part was printed whole, a token after a '?' with it (sweep 14 W10).
    name, _, digest = text.partition("@")
    if digest and not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
        return f"has the digest {said(digest)}, which is no sha256:<64 lower-case hex digits>"
    path = name.split("/", 1)[1] if "/" in name and re.search(r"[.:]|^localhost", name.split("/")[0]) else name
    path, _, tag = path.partition(":")
    if tag and not re.fullmatch(r"\w[\w.-]{0,127}", tag):
        return f"has the tag {said(tag)}: a tag is letters, digits, _ . and -, at most 128, not starting with . or -"
    if bad := re.search(r"[^A-Za-z0-9._/-]", path):  # `re%2Fpo` was blamed as upper case (sweep 11 U6)
        return (
            f"names the repository {said(path)}, whose {bad.group()!r} no repository name holds (lower-case letters, "
            "digits and . _ - between them, / between its parts)"
        )
    if path != path.lower():
        return f"names the repository {said(path)}: a repository name is lower-case"
    if len(name) > 255:
        return "is longer than the 255 characters of a name"
    return "is no image reference (REGISTRY/REPOSITORY[:TAG][@sha256:DIGEST], as docker and podman read one)"


def check_base(base: str, default: str) -> None:
    """Refuse a BASE_IMAGE that is no reference, or not of `default`'s CUDA major and Ubuntu release (read from
    `default`'s tag), unless it is a stand-in named as one whose tag, if any, is of that CUDA major."""
    wanted = CUDA_TAG.fullmatch((parse(default) or Reference(None, "", "", None)).tag or "")
    if wanted is None:
        raise UserError(
            f"the Dockerfile's BASE_IMAGE {default} names no CUDA release and Ubuntu in its tag",
            "give ARG BASE_IMAGE a tag such as 13.0.2-devel-ubuntu24.04, which says what the base is",
        )
    like = f"{default.split('@')[0]}@sha256:<digest>"
    ref = parse(base)
    if not base or ref is None:
        raise UserError(
            f"BASE_IMAGE={base!r} is no image reference", f"name an image, as REGISTRY/NAME:TAG[@DIGEST]: {like}"
        )
    standin = ref.domain and STANDIN.fullmatch(ref.domain) and "standin" in ref.path.replace("-", "")
    if standin and (ref.tag is None or ref.tag.split(".")[0] == wanted["major"]):
        return
    found = CUDA_TAG.fullmatch(ref.tag or "")
    if found is None or (found["major"], found["ubuntu"]) != (wanted["major"], wanted["ubuntu"]):
        says = f"CUDA {found['major']} on Ubuntu {found['ubuntu']}" if found else "no CUDA release and Ubuntu"
        raise UserError(
            f"BASE_IMAGE={base}: its tag says {says}, not the pairing's CUDA {wanted['major']} on Ubuntu "
            f"{wanted['ubuntu']}: the image would carry the pairing's tag and record without being built on its base",
            f"a base of CUDA {wanted['major']} on Ubuntu {wanted['ubuntu']}, its tag kept beside the digest: {like}; "
            "another base is a change of ARG BASE_IMAGE in slime.Dockerfile",
        )
