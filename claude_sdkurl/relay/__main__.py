"""``python -m claude_sdkurl.relay``: the protocol notes' relay, for a CLI run by hand (not
``relay.serve()``, which shows the program's own sessions from inside it)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from .._version import add_version_flag
from ._server import RelayError

CLOSE_WAIT = 5.0  # seconds the relay's close may take after SIGTERM or Ctrl-C


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m claude_sdkurl.relay",
        description="A relay a Claude Code CLI (2.1.120 or older) dials with --sdk-url, and frontends "
        "watch: a page at /, the raw NDJSON lines and status lines at /ws. Read-only and "
        "token-protected unless told otherwise.",
        epilog="This relay is for a CLI you start yourself (claude --sdk-url ws://HOST:PORT/ with the token it prints); "
        "its sessions are no program's. To watch or steer your program's own sessions, call relay.serve() "
        "in the program (or set CLAUDE_SDKURL_RELAY=HOST:PORT): the same page and /ws, inside that process, "
        "with its can_use_tool and hooks still deciding.",
    )
    add_version_flag(parser)
    parser.add_argument("--host", default="127.0.0.1", help="where to listen (default: 127.0.0.1, loopback)")
    parser.add_argument("--port", type=int, default=8765, help="the port (default: 8765, the first agents-ui probes)")
    parser.add_argument("--steer", action="store_true", help="frontends may send messages, decide permission requests and interrupt")
    parser.add_argument("--auto-approve", action="store_true", help="allow every tool call the CLI asks about, at once")
    parser.add_argument("--token", help="the token to require (default: a random one, printed)")
    parser.add_argument("--token-file", metavar="PATH",
                        help="keep the token in this file (made 0600 with a random one if missing): the page's link survives a restart")
    parser.add_argument("--tokenless", action="store_true",
                        help="let /ws frontends in without the token (loopback only, read-only; the page still needs it)")
    args = parser.parse_args(argv)
    from ._standalone import StandaloneRelay

    try:
        if args.token_file and args.token:
            raise RelayError("give the relay a token or a token file, not both")
        from ._token import token_from_file

        token = token_from_file(args.token_file) if args.token_file else args.token
        relay = StandaloneRelay(args.host, args.port, steer=args.steer, auto_approve=args.auto_approve,
                                token=token, tokenless=args.tokenless)  # fmt: skip
    except RelayError as e:
        parser.exit(2, f"error: {e}\n")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        # In short waits: a signal the kernel delivers to another of the relay's threads runs its
        # Python handler only when the main thread next runs bytecode, which a wait without a
        # timeout never lets it do (SIGTERM went unheard, now and then, until the process was killed).
        while not stop.wait(0.25):
            pass
    except KeyboardInterrupt:
        pass
    # A process told to stop stops: the relay's close joins its threads one after another, each
    # bounded, and under load they added up past half a minute (seen once in a whole test run);
    # what is not closed within CLOSE_WAIT is left to the process's exit (every thread is a daemon).
    closer = threading.Thread(target=relay.close, name="claude-sdkurl-relay-close", daemon=True)
    closer.start()
    closer.join(CLOSE_WAIT)
    if closer.is_alive():
        print(f"relay: not closed within {CLOSE_WAIT:g} s; exiting anyway", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
