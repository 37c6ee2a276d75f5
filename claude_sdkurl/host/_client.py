"""The attached side: a process that sends its conversations' turns to a session host and reads
their messages back, answering the host's ``can_use_tool`` questions with its own callback."""

from __future__ import annotations

import errno
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .._engine.parse import parse_message
from .._engine.usercode import call_user
from ..types import ClaudeAgentOptions, Message, PermissionResultDeny, PermissionUpdate, ToolPermissionContext
from ._wire import CALLBACK_ERROR, HostGoneError, HostUnreachableError, decode_error, encode_options, encode_result, line, read_frame

CONNECT_TIMEOUT = 10.0
SILENCE = 10.0  # a host that sends nothing for this long (it beats every second while it works) is frozen or cut off


def _silent() -> str:
    return (f"the session host sent nothing for {SILENCE:g} s, not even its heartbeat: frozen (SIGSTOP, a paused "
            "container) or cut off; what the turn did is in its transcript")


class HostLink:
    """How one process reaches the session host at ``path``. ``errors``: the host's errors by
    type name to raise as those types here (``Conversations`` gives its own)."""

    def __init__(self, path: str | os.PathLike[str], errors: dict[str, type[BaseException]] | None = None) -> None:
        self.path = Path(path)
        self._errors = dict(errors or {})

    def _connect(self) -> socket.socket:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.settimeout(CONNECT_TIMEOUT)
        try:
            conn.connect(str(self.path))
        except OSError as e:
            conn.close()
            why = {errno.ENOENT: "no socket there", errno.ECONNREFUSED: "nobody listens", errno.EACCES: "not allowed"}.get(e.errno or 0, str(e))
            raise HostUnreachableError(f"no session host at {self.path} ({why}): nothing was sent") from None
        conn.settimeout(SILENCE)  # each read and write: a host that says nothing for this long is gone
        return conn

    def ping(self) -> int:
        """The host's process id; :class:`HostUnreachableError` when none answers."""
        return int(self.request({"op": "ping"})["pid"])

    def request(self, frame: dict[str, Any]) -> dict[str, Any]:
        """One question, one answer (not a turn)."""
        conn = self._connect()
        try:
            conn.sendall(line(frame))
            with conn.makefile("rb") as reader:
                answer = read_frame(reader)
                while answer is not None and answer.get("op") == "beat":
                    answer = read_frame(reader)
        except TimeoutError:
            raise HostGoneError(_silent()) from None
        except OSError as e:
            raise HostGoneError(f"the session host went away: {e}") from None
        finally:
            conn.close()
        if answer is None:
            raise HostGoneError("the session host went away before answering")
        if answer.get("op") == "error":
            raise decode_error(answer, self._errors)
        return answer

    def turn(self, key: str, prompt: str, options: ClaudeAgentOptions, timeout: float | None,
             sender: tuple[float, str] | None = None, outside: bool = False) -> Iterator[Message]:  # fmt: skip
        """A turn run by the host: its messages, as :meth:`Conversations.send` gives them.
        Options are checked before anything is sent (:class:`HostOptionError`). ``sender``: the
        ``Conversations`` that sends it (when it was made, its name: which options win, see
        :func:`claude_sdkurl.conversations.wins`); ``outside``: as ``send(outside=)``."""
        fields, forward = encode_options(options)
        request: dict[str, Any] = {"op": "send", "key": key, "prompt": prompt, "options": fields, "forward": forward, "timeout": timeout,
                   "caller": f"worker {os.getpid()}@{socket.gethostname()}", "outside": outside}  # fmt: skip
        if sender is not None:
            request["sender"] = [sender[0], sender[1]]
        return self._turn(request, options)

    def _turn(self, request: dict[str, Any], options: ClaudeAgentOptions) -> Iterator[Message]:
        conn = self._connect()
        try:
            try:
                conn.sendall(line(request))
            except TimeoutError:
                raise HostGoneError(_silent()) from None
            except OSError as e:
                raise HostGoneError(f"the session host went away before taking the turn: {e}") from None
            with conn.makefile("rb") as reader:
                while True:
                    try:
                        frame = read_frame(reader)
                    except TimeoutError:  # (no beat either: not a long tool call, a host that cannot act)
                        raise HostGoneError(_silent()) from None
                    except OSError as e:
                        raise HostGoneError(f"the session host went away during the turn: {e}") from None
                    if frame is None:
                        raise HostGoneError("the session host went away during the turn (its transcript keeps what was said)")
                    op = frame.get("op")
                    if op == "message":
                        message = parse_message(frame["raw"])
                        if frame.get("outside") in ("turn", "interrupted"):  # the host's relay marked it
                            from .._engine.session import OUTSIDE  # (only then: a worker runs no session of its own)

                            setattr(message, OUTSIDE, frame["outside"])
                        yield message
                    elif op in ("ask", "hook", "mcp"):  # a question for this process's callbacks
                        if op == "ask":
                            answered = encode_result(self._decide(options, frame))
                        elif op == "hook":
                            answered = self._hook(options, frame)
                        else:
                            answered = self._mcp(options, frame)
                        try:
                            conn.sendall(line({"op": "answer", "n": frame.get("n"), "result": answered}))
                        except TimeoutError:
                            raise HostGoneError(_silent()) from None
                        except OSError as e:
                            raise HostGoneError(f"the session host went away during the turn: {e}") from None
                    elif op == "end":
                        return
                    elif op == "error":
                        raise decode_error(frame, self._errors)
        finally:
            conn.close()

    @staticmethod
    def _mcp(options: ClaudeAgentOptions, frame: dict[str, Any]) -> Any:
        """A JSON-RPC message for one of the caller's in-process MCP servers, answered here."""
        message = frame.get("message") if isinstance(frame.get("message"), dict) else {}
        assert isinstance(message, dict)
        config = options.mcp_servers.get(str(frame.get("server"))) if isinstance(options.mcp_servers, dict) else None
        instance = config.get("instance") if isinstance(config, dict) else None
        if instance is None or not hasattr(instance, "handle"):
            return {"jsonrpc": "2.0", "id": message.get("id"), "error": {"code": -32601, "message": f"Server '{frame.get('server')}' not found"}}
        try:
            return instance.handle(message)
        except Exception as e:  # noqa: BLE001 - raised again in the host, where the CLI is told as in-process
            return {CALLBACK_ERROR: str(e) or type(e).__name__}

    @staticmethod
    def _hook(options: ClaudeAgentOptions, frame: dict[str, Any]) -> Any:
        """The caller's hook callback the host named (event, matcher, callback), called here."""
        try:
            matcher = (options.hooks or {})[frame["event"]][int(frame["matcher"])]
            callback = matcher.hooks[int(frame["hook"])]
        except (KeyError, IndexError, TypeError, ValueError):
            return {}  # not a hook of these options: no opinion
        try:
            output = call_user(callback, frame.get("input"), frame.get("tool_use_id"), {"signal": None})
        except Exception as e:  # noqa: BLE001 - raised again in the host, where the CLI is told as in-process
            return {CALLBACK_ERROR: str(e) or type(e).__name__}
        return output if isinstance(output, dict) else {}

    @staticmethod
    def _decide(options: ClaudeAgentOptions, frame: dict[str, Any]) -> Any:
        callback = options.can_use_tool
        if callback is None:
            return PermissionResultDeny(message="no can_use_tool in the program that sent this turn")
        given = frame.get("context") if isinstance(frame.get("context"), dict) else {}
        assert isinstance(given, dict)
        context = ToolPermissionContext(
            suggestions=[PermissionUpdate.from_dict(s) for s in given.get("suggestions") or [] if isinstance(s, dict)],
            tool_use_id=given.get("tool_use_id"), agent_id=given.get("agent_id"), blocked_path=given.get("blocked_path"),
            decision_reason=given.get("decision_reason"), title=given.get("title"), display_name=given.get("display_name"),
            description=given.get("description"),
        )  # fmt: skip
        tool_input = frame.get("input") if isinstance(frame.get("input"), dict) else {}
        try:
            return call_user(callback, str(frame.get("tool_name")), tool_input, context)
        except Exception as e:  # noqa: BLE001 - as in-process: a callback that raises denies, and says why
            return PermissionResultDeny(message=f"can_use_tool raised {type(e).__name__}: {e}")
