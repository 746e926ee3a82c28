"""``sluice search``: the search (or its diagnostic) as a table, for operators (R-OPS-2).

Two ways to reach the data, and the table is the same either way, built from
the same response body the API answers:

* directly (the default): against ``DATABASE_URL`` in this process, with the
  same service code the SearchFunction runs. The caller is the operator, who
  holds the database anyway and so searches every base holding the name,
  unless ``--user``/``--org``/``--perm`` say whom to search as: then the
  ordinary resolution applies, which is how an operator previews what one user
  would get.
* ``--api URL``: through a running API (``sluice local up`` or the deployed
  one) as the bearer ``--token`` (or ``SLUICE_TOKEN``); the token decides scope.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

SNIPPET_CHARS = 70


def add_parser(sub: Any) -> None:
    p = sub.add_parser("search", help="search collections and print the results as a table")
    p.add_argument("query")
    p.add_argument("--collection", "-c", action="append", required=True, help="repeatable")
    p.add_argument("--top-k", type=int, default=4)
    p.add_argument("--candidates", type=int, default=8)
    p.add_argument("--alpha", type=float, help="the fusion's weight on the vector side: 0 lexical (BM25) only, "
                                               "1 vector only (default: the service's)")
    p.add_argument("--min-vec-score", type=float, help="the cosine gate (default: the model's vec_gate)")
    p.add_argument("--source", action="append", help="filter, repeatable (OR)")
    p.add_argument("--document-type", action="append", help="filter, repeatable (OR)")
    p.add_argument("--unit", action="append", dest="organizational_unit", help="organizational unit, repeatable")
    p.add_argument("--date-from", help="YYYY-MM-DD, inclusive")
    p.add_argument("--date-to", help="YYYY-MM-DD, inclusive")
    p.add_argument("--diagnostic", action="store_true", help="the console search: top 20, no threshold")
    p.add_argument("--json", action="store_true", help="print the response body instead of a table")
    p.add_argument("--api", default=os.environ.get("SLUICE_API_URL"), help="a running API instead of DATABASE_URL")
    p.add_argument("--token", default=os.environ.get("SLUICE_TOKEN"), help="bearer token for --api")
    p.add_argument("--user", help="direct mode: search as this user (default: the operator, an app admin)")
    p.add_argument("--org")
    p.add_argument("--perm", action="append", help="direct mode: the user's permissions")
    p.set_defaults(func=run)


def request_body(args: argparse.Namespace) -> dict[str, Any]:
    filters = {k: v for k, v in {
        "source": args.source, "document_type": args.document_type,
        "organizational_unit": args.organizational_unit, "date_from": args.date_from, "date_to": args.date_to,
    }.items() if v}
    body: dict[str, Any] = {"query": args.query, "collections": args.collection}
    if not args.diagnostic:
        body.update(top_k=args.top_k, candidates=args.candidates)
    body.update({k: v for k, v in (("alpha", args.alpha), ("min_vec_score", args.min_vec_score)) if v is not None})
    if filters:
        body["filters"] = filters
    return body


def _direct(args: argparse.Namespace, body: dict[str, Any]) -> dict[str, Any]:
    from sluice.api.http import validate
    from sluice.api.views import diagnostic_view, search_view
    from sluice.db.connection import transaction
    from sluice.identity import Principal
    from sluice.search.service import DiagnosticRequest, SearchRequest, diagnostic, operator_bases, search
    from sluice.wiring import embedder_for, reranker

    if args.user:
        who = Principal(args.user, args.org, frozenset(args.perm or ["collections:view"]), False)
        bases_for = None
    else:
        who = Principal("operator", None, frozenset(), True)
        bases_for = operator_bases
    with transaction() as conn:
        if args.diagnostic:
            req = validate(DiagnosticRequest, body)
            found = diagnostic(conn, who, req, embedder_for, reranker(), bases_for)
            return diagnostic_view(found).model_dump(mode="json")
        found = search(conn, who, validate(SearchRequest, body), embedder_for, reranker(), bases_for)
        return search_view(found).model_dump(mode="json")


def _through_api(args: argparse.Namespace, body: dict[str, Any]) -> dict[str, Any]:
    from sluice.cli.api_client import connect

    if not args.token:
        raise SystemExit("--api needs --token (or SLUICE_TOKEN); `sluice local token --user NAME` mints one")
    with connect(args.api, args.token, timeout=120) as api:
        found = api.diagnostic_search(request=body) if args.diagnostic else api.search(request=body)
    answer: dict[str, Any] = found.model_dump(mode="json")
    return answer


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def table(answer: dict[str, Any]) -> str:
    rows = answer.get("results", answer.get("candidates", []))
    diagnostic = "candidates" in answer
    head = ["#", "score", "vec", "text", "rerank", *(["vec_n", "text_n", "by", "gate", "passed"] if diagnostic else []),
            "collection", "filename", "chunk", "pages", "unit", "source", "content"]
    lines = []
    for i, r in enumerate(rows, 1):
        pages = "-" if r["page_start"] is None else f"{r['page_start']}-{r['page_end']}"
        snippet = " ".join(r["content"].split())[:SNIPPET_CHARS]
        lines.append([str(i), _fmt(r["score"]), _fmt(r["vec_score"]), _fmt(r["text_score"]),
                      _fmt(r["reranker_score"]),
                      *([_fmt(r["vec_norm"]), _fmt(r["text_norm"]), "+".join(r["found_by"]), r["gate"],
                         _fmt(r["passed"])] if diagnostic else []),
                      r["collection"], _fmt(r["filename"]), _fmt(r["chunk_index"]), pages,
                      _fmt(r["organizational_unit"]), _fmt(r["source"]), snippet])
    widths = [max(len(h), *(len(line[j]) for line in lines)) if lines else len(h) for j, h in enumerate(head)]
    out = ["  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)),
           "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in lines]
    out.append(f"{len(rows)} result(s) for {answer['query'][:120]!r}")
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    from sluice.errors import SluiceError

    body = request_body(args)
    try:
        answer = _through_api(args, body) if args.api else _direct(args, body)
    except SluiceError as exc:
        print(json.dumps(exc.body(), indent=2), file=sys.stderr)
        return 1
    except Exception as exc:
        from sluice.cli.api_client import refusal_of

        refused = refusal_of(exc)
        if refused is None:
            raise
        print(json.dumps(refused, indent=2), file=sys.stderr)
        return 1
    print(json.dumps(answer, indent=2, default=str) if args.json else table(answer))
    return 0
