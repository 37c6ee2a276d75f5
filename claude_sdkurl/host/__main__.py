"""``python -m claude_sdkurl.host``: run a session host until SIGTERM or Ctrl-C."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

PAGE_URL = "relay.url"  # with --relay: the page's address with its token, beside the socket


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
    parser.add_argument("--answer-timeout", type=float, default=300.0, metavar="SECONDS",
                        help="seconds a permission, hook or tool question waits for the worker that sent the turn; then it is "
                             "denied, with a reason the model sees (default: 300)")
    parser.add_argument("--store", default=None, metavar="URL",
                        help="the conversations' keys and leases: postgresql://...[#table], redis://...[#prefix] or a SQLite "
                             "file (default: a SQLite file in each CLI config directory); hosts on several machines share one")
    parser.add_argument("--session-store", default=None, metavar="URL",
                        help="the conversations' transcripts: postgresql://...[#table] or redis://...[#prefix] (default: the "
                             "CLI's files); hosts on several machines share one, so a conversation goes on on any of them")
    parser.add_argument("--relay", default=None, metavar="HOST:PORT",
                        help=f"also serve the relay's page for every session of the host (read-only unless --steer); its "
                             f"address, with its token, in {PAGE_URL} beside the socket (0600)")
    parser.add_argument("--steer", action="store_true", help="with --relay: the page may decide, interrupt and write")
    parser.add_argument("--relay-token-file", default=None, metavar="PATH",
                        help="with --relay: keep the page's token in this file (made 0600 if missing), so that its link, "
                             "and a tab left open, survive a restart of the host")
    args = parser.parse_args(argv)
    # from here on a SIGTERM stops the host in order (its socket, relay.url and record removed),
    # however soon it comes: whoever read the line that says it serves may send it at once
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
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
                        lease_wait=args.lease_wait, store=store, session_store=transcripts, answer_timeout=args.answer_timeout)
    except (HostError, ValueError) as e:
        parser.exit(2, f"error: {e}\n")
    watching = None
    if args.relay:
        from .. import relay

        where, _, port = args.relay.rpartition(":")
        from ..types import ClaudeAgentOptions

        # the page lists every session the CLIs' config directory keeps (after a restart too), to read
        try:
            watching = relay.serve(where or "127.0.0.1", int(port), steer=args.steer, options=ClaudeAgentOptions(session_store=transcripts),
                                   every_project=True, token_file=args.relay_token_file,
                                   announced_at=f"in {serving.path.parent / PAGE_URL} (0600) and on the session host's standard error")  # fmt: skip
        except relay.RelayError as e:
            serving.close()
            parser.exit(2, f"error: {e}\n")
        from .._files import replace_whole

        # where a service's page is found (systemd, Compose: standard error is only in the journal):
        # beside the socket, in the host's private folder, 0600, replaced whole at each start
        replace_whole(serving.path.parent / PAGE_URL, watching.url + "\n", mode=0o600)
    print(f"claude_sdkurl session host at {serving.path}", flush=True)
    try:
        while not stop.wait(0.25):  # short waits: the handler runs when the main thread next runs
            pass
    except KeyboardInterrupt:
        pass
    if watching is not None:
        (serving.path.parent / PAGE_URL).unlink(missing_ok=True)  # its token no longer opens anything
        watching.close()
    serving.close()
    print("claude_sdkurl session host stopped", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
