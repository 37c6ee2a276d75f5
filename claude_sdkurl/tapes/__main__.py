"""``python -m claude_sdkurl.tapes drift TAPE... --cli-path PATH``: run wire tapes again on another
CLI and report the frames that changed (exit 1 when any did). ``--cli``, its first spelling, is
still taken (not shown)."""

from __future__ import annotations

import argparse
import json
import sys

from .._version import add_version_flag
from ._drift import drift


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m claude_sdkurl.tapes")
    add_version_flag(parser)
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("drift", help="run tapes again on another CLI and report what changed")
    check.add_argument("tapes", nargs="+")
    check.add_argument("--cli-path", help="the Claude Code binary to run them on (required)")
    check.add_argument("--cli", dest="cli_path", help=argparse.SUPPRESS)  # the first spelling, as --cli-path elsewhere now
    check.add_argument("--json", action="store_true", help="one JSON report per tape")
    args = parser.parse_args(argv)
    if not args.cli_path:
        check.error("the following arguments are required: --cli-path")
    changed = False
    for path in args.tapes:
        report = drift(path, args.cli_path)
        changed = changed or report["changed"]
        if args.json:
            print(json.dumps(report))
            continue
        print(f"{path} (recorded on {report['recorded_on']}): {'changed' if report['changed'] else 'no change'}")
        for kind in report["new_kinds"]:
            print(f"  new message kind: {kind}")
        for kind in report["gone_kinds"]:
            print(f"  message kind gone: {kind}")
        for kind, change in report["fields"].items():
            print(f"  {kind}: fields added {change['added']}, removed {change['removed']}")
        for subtype, change in report["control_answers"].items():
            print(f"  answer to {subtype}: fields added {change['added']}, removed {change['removed']}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
