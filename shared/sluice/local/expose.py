"""``sluice local up --expose``: PostgreSQL and moto on TCP, for functions in containers (`sam local`).

Loopback and a unix socket stay the default. Exposing is opt-in because it opens the stack beyond
this machine's loopback: PostgreSQL then listens on the address given and requires, over TCP, a
password generated once per data directory (``pg-password``, readable by its owner only); the
unix socket stays as it was. moto has no authentication of its own: it answers anyone who reaches
the address, which is why the default address is loopback and exposing is a choice.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from sluice.db.connection import set_role_password

PASSWORD_FILE = "pg-password"  # noqa: S105 - a file name, not a password
USER = "postgres"
# TCP connections need the password (SCRAM); the unix socket, this user's own, stays trusted.
HBA = (
    "# Written by `sluice local up --expose` (sluice/local/expose.py).\n"
    "local all all trust\n"
    "host all all 0.0.0.0/0 scram-sha-256\n"
    "host all all ::/0 scram-sha-256\n"
)


def database_password(data_dir: Path) -> str:
    """This data directory's PostgreSQL password: generated at first use, owner-readable only."""
    path = data_dir / PASSWORD_FILE
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_urlsafe(24))
    return path.read_text().strip()


def expose_postgres(server: Any, socket_url: str, address: str, port: int, password: str) -> str:
    """Make the embedded PostgreSQL (a ``pgserver`` server) listen on ``address:port`` as well as on
    its unix socket, with ``password`` required over TCP; returns the socket's URL, which names the
    port too now (the socket's file name carries it). A restart: listening addresses are fixed at
    start, and pgserver starts it on the socket alone. pgserver stops, at clean-up, the postmaster
    it started: it is told of the new one, so the exposed server stops with the stack."""
    import pgserver
    from pgserver.utils import PostmasterInfo

    with psycopg.connect(socket_url, autocommit=True) as conn:
        set_role_password(conn, USER, password)
    pgdata = Path(server.pgdata)
    (pgdata / "pg_hba.conf").write_text(HBA)
    socket_dir = conninfo_to_dict(socket_url)["host"]
    pg_ctl: Any = pgserver.pg_ctl  # type: ignore[attr-defined]
    pg_ctl(["-w", "-m", "fast", "-o", f'-h "{address}" -p {port} -k "{socket_dir}"', "-l", str(pgdata / "log"),
            "restart"], pgdata=pgdata, user=server.system_user, timeout=30)
    restarted = PostmasterInfo.read_from_pgdata(pgdata)
    if restarted is None or not restarted.is_running():
        raise RuntimeError(f"the embedded PostgreSQL did not come back after exposing it on {address}:{port}: "
                           f"see {pgdata / 'log'}")
    server._postmaster_info = restarted
    return make_conninfo(socket_url, port=str(port))


def tcp_url(socket_url: str, host: str, port: int, password: str) -> str:
    """The socket URL's database over TCP at ``host:port`` with the password, TLS off in so many
    words (the local server has none, and Sluice requires TLS of any host not named local)."""
    params = conninfo_to_dict(socket_url)
    user, dbname = params.get("user") or USER, params.get("dbname") or "postgres"
    return f"postgresql://{quote(str(user), safe='')}:{quote(password, safe='')}@{host}:{port}/" \
           f"{quote(str(dbname), safe='')}?sslmode=disable"
