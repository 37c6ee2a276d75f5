"""Griffe extension (mkdocs.yml, mkdocstrings ``extensions:``): the API reference shows each
dataclass field's default as a reader writes it, and says which TypedDict keys may be left out.

A field declared ``field(default="auto", kw_only=True)`` is shown ``= "auto"`` and labelled
*keyword-only*; ``field(default_factory=list)`` is shown ``= []`` (a fresh one per instance, as the
factory makes it). A TypedDict key that is ``NotRequired[...]``, or any key of a ``total=False``
TypedDict that is not ``Required[...]``, is labelled *optional key*. The labels griffe puts on
every class attribute (*class-attribute*, *instance-attribute*) are left off: on a page of fields
they say nothing. Only what the page shows changes: the code is read, never imported or altered.
"""

from __future__ import annotations

from typing import Any

from griffe import Attribute, Class, Expr, ExprCall, Extension, Module, Object

_NOISE = {"class-attribute", "instance-attribute"}
_FACTORIES = {"list": "[]", "dict": "{}", "set": "set()", "tuple": "()"}


def _is_dataclass(cls: Class) -> bool:
    return any(isinstance(d.value, Expr) and d.value.canonical_path == "dataclasses.dataclass" for d in cls.decorators)


def _is_typeddict(cls: Class, package: Module) -> bool:
    """A ``TypedDict`` subclass, directly or through a TypedDict of the package
    (``class PreToolUseHookInput(BaseHookInput)``)."""
    for base in cls.bases:
        path = base.canonical_path if isinstance(base, Expr) else str(base)
        if path.rsplit(".", 1)[-1] == "TypedDict":
            return True
        try:
            target = package.modules_collection[path]
        except KeyError:  # an outside base griffe did not load: not ours to label
            continue
        if isinstance(target, Class) and _is_typeddict(target, package):
            return True
    return False


def _field_arguments(value: Any) -> dict[str, Any] | None:
    if isinstance(value, ExprCall) and value.canonical_path == "dataclasses.field":
        return {a.name: a.value for a in value.arguments if hasattr(a, "name")}
    return None


def _show_dataclass_field(attr: Attribute) -> None:
    args = _field_arguments(attr.value)
    if args is None:
        return
    if args.get("kw_only") == "True":
        attr.labels.add("keyword-only")
    if "default" in args:
        attr.value = args["default"]
    elif "default_factory" in args:
        factory = str(args["default_factory"])
        attr.value = _FACTORIES.get(factory, f"{factory}()")
    else:
        attr.value = None  # a required field declared with field(...): no default to show


def _is_optional_key(attr: Attribute, total: bool) -> bool:
    wrapper = attr.annotation.canonical_path if isinstance(attr.annotation, Expr) else ""
    if "NotRequired" in str(attr.annotation).split("[", 1)[0] or wrapper.endswith("NotRequired"):
        return True
    if str(attr.annotation).startswith("Required["):
        return False
    return not total


def _walk(obj: Object, package: Module, seen: set[str]) -> None:
    if obj.path in seen or obj.is_alias:
        return
    seen.add(obj.path)
    for member in list(obj.members.values()):
        if member.is_alias:
            continue
        if isinstance(member, Class):
            for attr in member.members.values():
                if isinstance(attr, Attribute):
                    attr.labels -= _NOISE
            if _is_dataclass(member):
                for attr in member.members.values():
                    if isinstance(attr, Attribute):
                        _show_dataclass_field(attr)
            elif _is_typeddict(member, package):
                total = str(member.keywords.get("total", "True")) != "False"
                for attr in member.members.values():
                    if isinstance(attr, Attribute) and attr.annotation is not None and _is_optional_key(attr, total):
                        attr.labels.add("optional key")
            _walk(member, package, seen)
        elif isinstance(member, Module):
            _walk(member, package, seen)


class ReaderDefaults(Extension):
    """See the module's docstring."""

    def on_package(self, *, pkg: Module, **kwargs: Any) -> None:
        _walk(pkg, pkg, set())
