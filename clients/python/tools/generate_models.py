"""Write ``sluice_client/models.py`` from the service's OpenAPI document.

    python clients/python/tools/generate_models.py [infra/openapi.json]

One pydantic model per component schema, with the document's field names, types
and required set (constraints stay the service's to enforce: its refusal names the
field with a sentence). Every model allows fields the document does not (yet) have,
so a newer service's response parses and a request can carry a field this version
does not know. The multipart bodies (``Body_*``) are not models: ``upload`` and
friends build those forms. tests/test_models_match_document.py fails when the
committed file is not what this script writes from the committed document.
"""

from __future__ import annotations

import json
import keyword
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DOCUMENT = HERE.parents[2] / "infra" / "openapi.json"
OUT = HERE.parent / "src" / "sluice_client" / "models.py"
FORM_PREFIX = "Body_"

HEADER = '''"""The service's request and response bodies (generated from infra/openapi.json: do not edit).

Regenerate with ``python clients/python/tools/generate_models.py`` whenever the document changes;
a test fails until then.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field


class SluiceModel(BaseModel):
    """Extra fields are kept: a newer service's field parses, a request may carry one this client does not name."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

'''

_FORMATS = {"date-time": "datetime", "date": "date", "uuid": "UUID", "binary": "bytes"}
_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


def type_of(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return " | ".join(dict.fromkeys(type_of(s) for s in schema["anyOf"]))
    if "const" in schema:
        return f"Literal[{schema['const']!r}]"
    if "enum" in schema:
        return "Literal[" + ", ".join(repr(v) for v in schema["enum"]) + "]"
    kind = schema.get("type")
    if kind == "array":
        return f"list[{type_of(schema.get('items', {}))}]"
    if kind == "object":
        extra = schema.get("additionalProperties")
        return f"dict[str, {type_of(extra) if isinstance(extra, dict) and extra else 'Any'}]"
    if kind == "string" and schema.get("format") in _FORMATS:
        return _FORMATS[schema["format"]]
    if isinstance(kind, str) and kind in _SCALARS:
        return _SCALARS[kind]
    return "Any"


def _field(name: str, schema: dict[str, Any], required: bool) -> str:
    attr = name + "_" if keyword.iskeyword(name) else name
    args: list[str] = []
    if not required:
        args.append(f"default={schema['default']!r}" if "default" in schema else "default=None")
    if attr != name:
        args.append(f"alias={name!r}")
    if schema.get("description"):
        args.append(f"description={schema['description']!r}")
    value = f" = Field({', '.join(args)})" if args else ""
    kind = type_of(schema)
    # The document's own shape: a field left out is None although null is not one of its values.
    ignore = "  # type: ignore[arg-type]" if "default=None" in args and "None" not in kind.split(" | ") else ""
    return f"    {attr}: {kind}{value}{ignore}"


def model_source(name: str, schema: dict[str, Any]) -> str:
    lines = [f"class {name}(SluiceModel):"]
    if schema.get("description"):
        lines.append(f"    {json.dumps(schema['description'])}")
        lines.append("")
    required = set(schema.get("required", []))
    props = schema.get("properties", {})
    lines += [_field(p, s, p in required) for p, s in props.items()] or ["    pass"]
    return "\n".join(lines)


def render(document: dict[str, Any]) -> str:
    schemas = document["components"]["schemas"]
    names = [n for n in schemas if not n.startswith(FORM_PREFIX)]
    body = "\n\n\n".join(model_source(n, schemas[n]) for n in names)
    rebuild = "\n".join(f"{n}.model_rebuild()" for n in names)
    exports = "__all__ = [\n" + "".join(f"    {n!r},\n" for n in ["SluiceModel", *names]) + "]\n"
    return HEADER + "\n" + body + "\n\n\n" + rebuild + "\n\n" + exports


def main(argv: list[str]) -> int:
    source = Path(argv[1]) if len(argv) > 1 else DOCUMENT
    OUT.write_text(render(json.loads(source.read_text(encoding="utf-8"))), encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
