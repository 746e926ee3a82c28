"""The console (R-UI-1): its page and hashed assets, built by Vite into static/ beside this file.

Public routes (no authorizer): the page holds no data, and every call it makes is an ordinary API
call with the signed-in user's bearer token. Strict headers: sluice.api.console.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response

from sluice.api.console import Console, PageConfig, accepts_gzip, origin
from sluice.config import current
from sluice.config.functions import ConsoleFunction
from sluice.observability import http_handler
from sluice.wiring import object_store

STATIC = Path(__file__).resolve().parent / "static"

# Powertools' plain resolver: these answers are files (bytes), not models to validate; two routes, no input.
app = APIGatewayHttpResolver()


@lru_cache(maxsize=1)
def console() -> Console:
    s = current(ConsoleFunction)
    # Where the uploads function's presigned POSTs go: the same store signs a probe here (no request).
    upload = object_store().presigned_post("console/origin-probe", max_bytes=1, expires_in=60, metadata={})
    connect = [origin(s.console_issuer), origin(str(upload["url"])),
               *(origin(o) for o in s.console_connect_origins.split(","))]
    return Console(STATIC, PageConfig(issuer=s.console_issuer if origin(s.console_issuer) else "",
                                      client_id=s.console_client_id, max_upload_bytes=s.max_upload_bytes,
                                      direct_upload_max_bytes=s.direct_upload_max_bytes),
                   [o for o in connect if o])


@app.get("/console", include_in_schema=False)
def page() -> Response[Any]:
    return console().page(gzip_ok=accepts_gzip(app.current_event.headers))


@app.get("/console/assets/<name>", include_in_schema=False)
def asset(name: str) -> Response[Any]:
    return console().asset(unquote(name), gzip_ok=accepts_gzip(app.current_event.headers))


handler = http_handler(app, settings=ConsoleFunction)
