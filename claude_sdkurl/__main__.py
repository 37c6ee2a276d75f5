"""``python -m claude_sdkurl "prompt"``: run one query and print the stream.

Exit status: 0 on success, 1 when the turn ended in an error result, 2 when
Claude Code could not be found or started, 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from typing import Any

from collections.abc import Iterable, Iterator

from . import ClaudeAgentOptions, ClaudeSDKError, Message, ResultError, ResultMessage, SystemMessage, query
from ._version import add_version_flag
from .display import stream_text

_AUTH_HINTS = ("invalid api key", "authentication", "not logged in", "please run /login", "oauth", "401")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m claude_sdkurl", description="Ask Claude Code and print the answer.")
    p.add_argument("prompt", help="the prompt; '-' reads it from standard input")
    p.add_argument("--model", help="model name or alias")
    p.add_argument(
        "--permission-mode",
        choices=["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto"],
        help="permission mode for tools",
    )
    p.add_argument("--transport", choices=["auto", "websocket", "stdio"], default="auto")
    p.add_argument("--cli-path", help="path to the claude binary")
    p.add_argument("--cwd", help="working directory for the session")
    p.add_argument("--max-turns", type=int)
    p.add_argument("--system-prompt")
    p.add_argument("--allowed-tools", help="comma-separated tools to allow without asking")
    p.add_argument("--json", action="store_true", help="print every message as one JSON line (its wire form)")
    p.add_argument("-v", "--verbose", action="store_true", help="log the SDK's debug messages to stderr")
    add_version_flag(p)
    return p


_OPTION = re.compile(r"(?:ClaudeAgentOptions\()?\b([a-z_]+)=('[^']*'|\d+)(\))?((?: or '[^']*')*)")


def _in_command_words(text: str, parser: argparse.ArgumentParser) -> str:
    """An error's words for a program (``transport='stdio'``, ``ClaudeAgentOptions(cli_path=...)``,
    ``cli_path``) as the flags of this command (``--transport stdio``, ``--cli-path ...``), where
    it has them; the rest as written."""
    flags = {a.dest: a.option_strings[-1] for a in parser._actions if a.option_strings}

    def flag(match: re.Match[str]) -> str:
        name, value, alternatives = match.group(1), match.group(2).strip("'"), match.group(4) or ""
        if name not in flags:
            return match.group(0)
        said = f"{flags[name]} {value}"
        for other in re.findall(r" or '([^']*)'", alternatives):
            said += f" or {flags[name]} {other}"
        return said

    text = _OPTION.sub(flag, text)
    return re.sub(r"\bat cli_path\b", f"at {flags['cli_path']}", text)


class _InCommandWords(logging.Formatter):
    """Log lines as basicConfig's, in the command's words (:func:`_in_command_words`)."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__(logging.BASIC_FORMAT)
        self.parser = parser

    def format(self, record: logging.LogRecord) -> str:
        return _in_command_words(super().format(record), self.parser)


class _AuthRefused(Exception):
    pass


def _stop_on_auth_retry(messages: Iterable[Any]) -> Iterator[Any]:
    """The CLI retries a refused login ten times with backoff; give up at the first."""
    for message in messages:
        if (
            isinstance(message, SystemMessage)
            and message.subtype == "api_retry"
            and message.data.get("error") == "authentication_failed"
        ):
            raise _AuthRefused()
        yield message


def _is_auth_problem(result: ResultMessage) -> bool:
    text = " ".join([result.result or "", *(result.errors or [])]).lower()
    return result.is_error and any(h in text for h in _AUTH_HINTS)


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    said = logging.StreamHandler(sys.stderr)
    said.setFormatter(_InCommandWords(parser))
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, handlers=[said])
    prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
    kw: dict[str, Any] = {"transport": args.transport, "include_partial_messages": not args.json}
    for name in ("model", "permission_mode", "cli_path", "cwd", "max_turns", "system_prompt"):
        if getattr(args, name) is not None:
            kw[name] = getattr(args, name)
    if args.allowed_tools:
        kw["allowed_tools"] = [t.strip() for t in args.allowed_tools.split(",") if t.strip()]
    options = ClaudeAgentOptions(**kw)
    last: list[ResultMessage] = []

    def results_kept(messages: Iterator[Message]) -> Iterator[Message]:
        for message in messages:
            if isinstance(message, ResultMessage):
                last[:] = [message]
            yield message

    messages = results_kept(_stop_on_auth_retry(query(prompt, options)))
    auth_refused = False  # also after an error result (ResultError), which is judged below
    try:
        if args.json:
            for message in messages:
                print(json.dumps(getattr(message, "raw", None) or {"type": type(message).__name__}), flush=True)
        else:
            stream_text(messages, file=sys.stdout)
    except ResultError:
        pass  # the error result was yielded: reported below, as any result
    except ClaudeSDKError as e:  # CLINotFoundError among them
        print(f"error: {_in_command_words(str(e), parser)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except _AuthRefused:
        last.clear()
        auth_refused = True
    result = last[0] if last else None
    auth_refused = auth_refused or (result is not None and _is_auth_problem(result))
    if auth_refused:
        print(
            "error: Claude Code is not logged in or its API key was refused.\n"
            "Run `claude` once and log in (or set ANTHROPIC_API_KEY), then try again.",
            file=sys.stderr,
        )
        return 1
    if result is None:
        print("error: Claude Code ended without a result", file=sys.stderr)
        return 1
    if not args.json:
        cost = f"${result.total_cost_usd:.4f}" if result.total_cost_usd is not None else "n/a"
        print(f"[{result.subtype} · {result.duration_ms / 1000:.1f} s · {cost}]", file=sys.stderr)
    return 1 if result.is_error else 0


if __name__ == "__main__":
    raise SystemExit(main())
