"""``python -m claude_sdkurl.host``: run a session host until SIGTERM or Ctrl-C."""

from __future__ import annotations

import argparse
import signal
import sys
import threading


def main(argv: list[str] | None = None) -> int:
    from . import HostError, default_socket_path, serve

    parser = argparse.ArgumentParser(prog="python -m claude_sdkurl.host",
                                     description="A session host: one process that owns the Claude Code CLIs of this machine's "
                                     "conversations; worker processes attach with Conversations(..., host=PATH).")  # fmt: skip
    parser.add_argument("--socket", default=None, help=f"the Unix socket (default: {default_socket_path()})")
    parser.add_argument("--max-live", type=int, default=8, help="CLIs alive at once (default: 8)")
    parser.add_argument("--idle-timeout", type=float, default=300.0, help="seconds before an idle conversation's CLI stops (default: 300)")
    parser.add_argument("--lease-ttl", type=float, default=30.0, help="seconds a conversation's lease lasts unrenewed (default: 30)")
    parser.add_argument("--lease-wait", type=float, default=300.0,
                        help="seconds a message waits for a conversation another holder keeps (default: 300)")
    parser.add_argument("--relay", default=None, metavar="HOST:PORT",
                        help="also serve the relay's page for every session of the host (read-only unless --steer)")
    parser.add_argument("--steer", action="store_true", help="with --relay: the page may decide, interrupt and write")
    args = parser.parse_args(argv)
    try:
        serving = serve(args.socket, max_live=args.max_live, idle_timeout=args.idle_timeout, lease_ttl=args.lease_ttl,
                        lease_wait=args.lease_wait)
    except HostError as e:
        parser.exit(2, f"error: {e}\n")
    watching = None
    if args.relay:
        from .. import relay

        where, _, port = args.relay.rpartition(":")
        from ..types import ClaudeAgentOptions

        # the page lists every session the CLIs' config directory keeps (after a restart too), to read
        watching = relay.serve(where or "127.0.0.1", int(port), steer=args.steer, options=ClaudeAgentOptions(), every_project=True)
    print(f"claude_sdkurl session host at {serving.path}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.wait(0.25):  # short waits: the handler runs when the main thread next runs
            pass
    except KeyboardInterrupt:
        pass
    if watching is not None:
        watching.close()
    serving.close()
    print("claude_sdkurl session host stopped", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
