"""``sluice mcp``: the MCP server of sluice-client (sluice_client.mcp_server), started from the CLI.

The server is a client of the HTTP API like any other, so it lives in the client's
distribution (``pip install 'sluice-client[mcp]'``; ``make install`` installs it):
this command hands it its arguments, ``sluice mcp --help`` included.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser("mcp", add_help=False, help="serve search and documents to MCP clients (stdio or HTTP), "
                                                   "as the caller's own token")
    p.add_argument("args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    p.set_defaults(func=lambda args: serve(list(args.args)))


def serve(argv: list[str]) -> int:
    """Start the server with ``argv`` (sluice.cli.main hands over everything after ``mcp``)."""
    try:
        from sluice_client.mcp_server import main
    except ImportError as exc:
        print(f"sluice mcp needs sluice-client with its MCP extra: pip install -e 'clients/python[mcp]' "
              f"(make install does) ({exc})", file=sys.stderr)
        return 2
    return main(argv)
