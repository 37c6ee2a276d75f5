"""What the session host and the processes attached to it say to each other: one JSON object a
line over a Unix socket, and how options and permission answers travel in them.

A turn, from the caller's side::

    -> {"op": "send", "key": ..., "prompt": ..., "options": {...}, "forward": ["can_use_tool"], "timeout": ...}
    <- {"op": "message", "raw": {...}}           the CLI's message as it wrote it (parsed again here)
    <- {"op": "ask", "n": 1, "tool_name": ..., "input": {...}, "context": {...}}
    -> {"op": "answer", "n": 1, "result": {"behavior": "allow", ...}}
    <- {"op": "beat"}                            every second while the request runs (see _client.SILENCE)
    <- {"op": "end"} | {"op": "error", "type": ..., "message": ..., "args": [...], "attrs": {...}}

An error is raised in the caller as the type it was in the host, where that type is one a turn
can raise in-process (the package's errors, ``ValueError``, ``TypeError``, ``RuntimeError``,
``TimeoutError`` and the types the caller names), with the same arguments and attributes
(``exit_code``, ``stderr``, a result error's ``data``, ...); any other type is a
:class:`HostError` that names it.

Options travel as their fields that differ from the defaults, each as JSON; a field that cannot
(a callback, a store object, an in-process MCP server) is refused by name before anything is
sent, except ``can_use_tool`` and the ``hooks`` callbacks, which stay here and are asked over the
connection (the hooks' events, matchers and timeouts travel), and the in-process MCP servers
(``create_sdk_mcp_server``: their names travel, each JSON-RPC message is answered here)::

    <- {"op": "hook", "n": 2, "event": "PreToolUse", "matcher": 0, "hook": 0, "input": {...}, "tool_use_id": ...}
    -> {"op": "answer", "n": 2, "result": {...the callback's output...}}
    <- {"op": "mcp", "n": 3, "server": "calc", "message": {...JSON-RPC...}}
    -> {"op": "answer", "n": 3, "result": {...the server's reply, or null...}}
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import PurePath
from typing import Any

from .. import _errors
from .._engine import relaunch
from .._errors import ClaudeSDKError, CLIConnectionError
from ..types import ClaudeAgentOptions, PermissionResultAllow, PermissionResultDeny, PermissionUpdate

CALLBACK_ERROR = "claude_sdkurl_callback_error"  # an answer with this key: the caller's hook or MCP server raised
# (its text, as the CLI is told in-process: the exception's message, else its type's name)
MAX_LINE = 64 * 1024 * 1024  # the longest line either side reads (a CLI message can be large)
FORWARDED = ("can_use_tool", "hooks")  # callbacks that stay in the caller's process and are asked over the socket
# (and the in-process MCP servers of ``mcp_servers``: their names travel, their calls are asked)


class HostError(ClaudeSDKError):
    """The session host refused or failed a request (see the message)."""


class HostUnreachableError(HostError, CLIConnectionError):
    """No session host answers at that socket: nothing was sent."""


class HostGoneError(HostError, CLIConnectionError):
    """The session host went away during the turn (killed, stopped). The conversation's
    transcript keeps what was said; its next message, to a host started again, goes on."""


class HostOptionError(HostError, TypeError):
    """An option the host cannot carry to its CLIs (a callback, an object); nothing was sent."""


def _jsonable(value: Any) -> Any:
    """``value`` as JSON (an exception as its encoded error), or ``_SKIP`` where it is not."""
    if isinstance(value, BaseException):
        return {"__error__": encode_error(value)}
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return _SKIP


_SKIP = object()


def encode_error(error: BaseException) -> dict[str, Any]:
    """An error frame for ``error``: its type's name, its text, its arguments and its public
    attributes that travel as JSON (see the module doc)."""
    args = [_jsonable(a) for a in error.args]
    attrs = {k: _jsonable(v) for k, v in vars(error).items() if k.isidentifier() and not k.startswith("_")}
    return {"op": "error", "type": type(error).__name__, "message": str(error),
            "args": args if _SKIP not in args else [str(error)], "attrs": {k: v for k, v in attrs.items() if v is not _SKIP}}  # fmt: skip


def error_types() -> dict[str, type[BaseException]]:
    """The types an error frame is raised as, by name: the package's own and those of Python's
    that a turn raises in-process."""
    ours = {name: kind for name, kind in vars(_errors).items() if isinstance(kind, type) and issubclass(kind, ClaudeSDKError)}
    builtin = {kind.__name__: kind for kind in (ValueError, TypeError, RuntimeError, TimeoutError)}
    host = {kind.__name__: kind for kind in (HostError, HostGoneError, HostOptionError, HostUnreachableError)}
    return {**builtin, **ours, **host}


def decode_error(frame: dict[str, Any], errors: dict[str, type[BaseException]] | None = None) -> BaseException:
    """The error an error frame says, as its own type where it is one of :func:`error_types`
    or ``errors``; else a :class:`HostError` that names it. The type's constructor is not run:
    the arguments and attributes are the host's."""
    kind, text = str(frame.get("type")), str(frame.get("message"))
    known = {**error_types(), **(errors or {})}
    if kind not in known:
        return HostError(f"{kind}: {text} (in the session host)")
    cls = known[kind]
    error = cls.__new__(cls)
    args = frame.get("args")
    error.args = tuple(_decoded(a) for a in args) if isinstance(args, list) else (text,)
    attrs = frame.get("attrs")
    for name, value in (attrs.items() if isinstance(attrs, dict) else ()):
        if isinstance(name, str) and name.isidentifier() and not name.startswith("_"):
            setattr(error, name, _decoded(value))
    return error


def _decoded(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"__error__"} and isinstance(value["__error__"], dict):
        return decode_error(value["__error__"])
    return value


def encode_options(options: ClaudeAgentOptions) -> tuple[dict[str, Any], list[str]]:
    """``(fields that differ from the defaults, as JSON values; callbacks to forward)``."""
    default = ClaudeAgentOptions()
    fields: dict[str, Any] = {}
    forward: list[str] = []
    for f in dataclasses.fields(ClaudeAgentOptions):
        value = getattr(options, f.name)
        if value == getattr(default, f.name):
            continue
        if f.name == "can_use_tool":
            forward.append(f.name)
            continue
        if f.name == "hooks":  # their shape travels; each callback is asked of the caller
            fields["hooks"] = hook_shape(value)
            forward.append(f.name)
            continue
        if f.name == "mcp_servers" and isinstance(value, dict) and any(_in_process(c) for c in value.values()):
            value = {name: {"type": "sdk", "name": c.get("name", name)} if _in_process(c) else c for name, c in value.items()}
            forward.append(f.name)
        value = os.fspath(value) if isinstance(value, PurePath) else value
        try:
            fields[f.name] = json.loads(json.dumps(value))
        except (TypeError, ValueError):
            raise HostOptionError(f"the session host cannot carry options.{f.name} ({type(value).__name__}) to its CLIs; "
                                  f"only can_use_tool is asked back over the connection") from None  # fmt: skip
        if fields[f.name] != value:  # (a tuple becomes a list: same for the CLI; anything else changed is refused)
            if not (isinstance(value, tuple) and list(value) == fields[f.name]):
                raise HostOptionError(f"options.{f.name} does not survive JSON unchanged; the host cannot carry it")
    return fields, forward


def _in_process(config: Any) -> bool:
    return isinstance(config, dict) and config.get("type") == "sdk"


def hook_shape(hooks: Any) -> dict[str, list[dict[str, Any]]]:
    """What the host needs of ``options.hooks`` to ask for each callback: by event, each
    matcher's pattern, timeout, failure rule and number of callbacks."""
    if not isinstance(hooks, dict):
        raise HostOptionError("options.hooks is a dict of event -> [HookMatcher]")
    return relaunch.hook_shape(hooks)


def decode_options(fields: Any) -> tuple[ClaudeAgentOptions, dict[str, Any] | None]:
    """The options a caller sent, and the shape of its hooks (``None``: none);
    :class:`HostOptionError` for an unknown field."""
    if not isinstance(fields, dict):
        raise HostOptionError("options are a JSON object")
    fields = dict(fields)
    shape = fields.pop("hooks", None)
    known = {f.name for f in dataclasses.fields(ClaudeAgentOptions)} - set(FORWARDED)
    unknown = sorted(set(fields) - known)
    if unknown:
        raise HostOptionError(f"unknown options: {', '.join(unknown)}")
    if shape is not None and not isinstance(shape, dict):
        raise HostOptionError("the hooks' shape is a JSON object")
    return ClaudeAgentOptions(**fields), shape


def encode_result(result: Any) -> dict[str, Any]:
    """A ``can_use_tool`` answer as JSON (anything else is a deny that says so)."""
    if isinstance(result, PermissionResultAllow):
        out: dict[str, Any] = {"behavior": "allow"}
        if result.updated_input is not None:
            out["updated_input"] = result.updated_input
        if result.updated_permissions:
            out["updated_permissions"] = [p.to_dict() for p in result.updated_permissions]
        return out
    if isinstance(result, PermissionResultDeny):
        return {"behavior": "deny", "message": result.message, "interrupt": result.interrupt}
    return {"behavior": "deny", "message": f"can_use_tool returned {type(result).__name__}, not a permission result"}


def decode_result(data: Any) -> PermissionResultAllow | PermissionResultDeny:
    if isinstance(data, dict) and data.get("behavior") == "allow":
        updated = data.get("updated_input")
        permissions = data.get("updated_permissions")
        return PermissionResultAllow(
            updated_input=updated if isinstance(updated, dict) else None,
            updated_permissions=[PermissionUpdate.from_dict(p) for p in permissions] if isinstance(permissions, list) else None,
        )
    if isinstance(data, dict) and data.get("behavior") == "deny":
        return PermissionResultDeny(message=str(data.get("message") or ""), interrupt=data.get("interrupt") is True)
    return PermissionResultDeny(message="the caller's answer was not a permission result")


def line(frame: dict[str, Any]) -> bytes:
    return (json.dumps(frame, separators=(",", ":")) + "\n").encode()


def read_frame(reader: Any) -> dict[str, Any] | None:
    """The next frame, ``None`` at the end of the stream. :class:`HostError` for a line that is
    too long or not a JSON object."""
    raw = reader.readline(MAX_LINE + 1)
    if not raw:
        return None
    if len(raw) > MAX_LINE or not raw.endswith(b"\n"):
        if not raw.endswith(b"\n") and len(raw) <= MAX_LINE:
            return None  # cut short: the other side went away mid-line
        raise HostError("a line longer than the host reads")
    try:
        frame = json.loads(raw)
    except ValueError:
        raise HostError("a line that is not JSON") from None
    if not isinstance(frame, dict):
        raise HostError("a line that is not a JSON object")
    return frame
