"""slime's arguments for the rollout side, without Megatron's objects (wall W57). Standard library only.

slime makes its rollout manager (and, through it, every engine actor) with `args`, the namespace Megatron's argument
parser returns. It holds members of Megatron's enums (`attention_backend` is an `AttnBackend`), and unpickling one
imports its module, whose package imports most of Megatron and TransformerEngine: ~4,500 modules, 4 to 8 s in each of
those Ray actors, which use none of it. `detached_args` copies the namespace with each such member (alone or in a
list, tuple or dict) as a `Deferred`, which pickles as its module, class and member names and resolves to the member
on its first use (a comparison, a hash, an attribute), so a process that never uses it never imports Megatron. Its
str() and repr() are the member's, recorded when detached.
"""

from __future__ import annotations

import argparse
import enum
import importlib

OWNERS = ("megatron",)  # the top-level packages whose enum members are deferred


class Deferred:
    """An enum member named by module, class and member, imported on first use."""

    __slots__ = ("_member", "_ref", "_text")

    def __init__(self, ref: tuple[str, str, str], text: tuple[str, str]):
        self._ref, self._text, self._member = ref, text, None

    def resolve(self) -> enum.Enum:
        if self._member is None:
            module, qualname, name = self._ref
            owner = importlib.import_module(module)
            for part in qualname.split("."):
                owner = getattr(owner, part)
            self._member = owner[name]
        return self._member

    def __reduce__(self):
        return Deferred, (self._ref, self._text)

    def __eq__(self, other) -> bool:
        return self.resolve() == (other.resolve() if isinstance(other, Deferred) else other)

    def __hash__(self) -> int:
        return hash(self.resolve())

    def __getattr__(self, name: str):
        return getattr(self.resolve(), name)

    def __str__(self) -> str:
        return self._text[0]

    def __repr__(self) -> str:
        return self._text[1]


def _detach(value):
    if isinstance(value, enum.Enum) and type(value).__module__.split(".")[0] in OWNERS:
        kind = type(value)
        return Deferred((kind.__module__, kind.__qualname__, value.name), (str(value), repr(value)))
    if isinstance(value, (list, tuple)):
        return type(value)(_detach(item) for item in value)
    if isinstance(value, dict):
        return {key: _detach(item) for key, item in value.items()}
    return value


def detached_args(args: argparse.Namespace) -> argparse.Namespace:
    """A shallow copy of `args` whose Megatron enum members are Deferred; `args` itself is left as it is."""
    return argparse.Namespace(**{key: _detach(value) for key, value in vars(args).items()})
