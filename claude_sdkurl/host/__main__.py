"""``python -m claude_sdkurl.host``: run a session host until SIGTERM or Ctrl-C."""

from __future__ import annotations

import argparse
import signal
import sys
import threading


def main(argv: list[str] | None = None) -> int:
    from . import HostError, default_socket_path, serve
    from .._version import add_version_flag

    parser = argparse.ArgumentParser(prog="python -m claude_sdkurl.host",
                                     description="A session host: one process that owns the Claude Code CLIs of this machine's "
                                     "conversations; worker processes attach with Conversations(..., host=PATH).")  # fmt: skip
    add_version_flag(parser)
    parser.add_argument("--socket", default=None, help=f"the Unix socket (default: {default_socket_path()})")
    parser.add_argument("--max-live", type=int, default=8, help="CLIs alive at once (default: 8)")
    parser.add_argument("--idle-timeout", type=float, default=300.0, help="seconds before an idle conversation's CLI stops (default: 300)")
    parser.add_argument("--lease-ttl", type=float, default=30.0, help="seconds a conversation's lease lasts unrenewed (default: 30)")
    parser.add_argument("--lease-wait", type=float, default=300.0,
                        help="seconds a message waits for a conversation another holder keeps (default: 300)")
    parser.add_argument("--store", default=None, metavar="URL",
                        help="the conversations' keys and leases: postgresql://...[#table], redis://...[#prefix] or a SQLite "
                             "file (default: a SQLite file in each CLI config directory); hosts on several machines share one")
    parser.add_argument("--session-store", default=None, metavar="URL",
                        help="the conversations' transcripts: postgresql://...[#table] or redis://...[#prefix] (default: the "
                             "CLI's files); hosts on several machines share one, so a conversation goes on on any of them")
    parser.add_argument("--relay", default=None, metavar="HOST:PORT",
                        help="also serve the relay's page for every session of the host (read-only unless --steer)")
    parser.add_argument("--steer", action="store_true", help="with --relay: the page may decide, interrupt and write")
    args = parser.parse_args(argv)
    from ._stores import conversation_store, session_store

    try:
        store = conversation_store(args.store) if args.store else None
        transcripts = session_store(args.session_store) if args.session_store else None
    except (ValueError, ImportError, OSError) as e:
        parser.exit(2, f"error: {e}\n")
    except Exception as e:  # noqa: BLE001 - the database's driver: unreachable, refused
        parser.exit(2, f"error: the store cannot be opened: {type(e).__name__}: {e}\n")
    try:
        serving = serve(args.socket, max_live=args.max_live, idle_timeout=args.idle_timeout, lease_ttl=args.lease_ttl,
                        lease_wait=args.lease_wait, store=store, session_store=transcripts)
    except HostError as e:
        parser.exit(2, f"error: {e}\n")
    watching = None
    if args.relay:
        from .. import relay

        where, _, port = args.relay.rpartition(":")
        from ..types import ClaudeAgentOptions

        # the page lists every session the CLIs' config directory keeps (after a restart too), to read
        watching = relay.serve(where or "127.0.0.1", int(port), steer=args.steer, options=ClaudeAgentOptions(session_store=transcripts),
                               every_project=True)  # fmt: skip
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
