"""cfn-lint on template.yaml once per template: `make lint` and tests/unit/test_template.py both run it
(about 20 s on two cores), so a clean pass is remembered under .lint-cache/, named by a hash of the
template's bytes and cfn-lint's version, and either asks again only when one of them changed.

`python -m tests.cfn_lint` is `make lint`'s check: any finding fails it, warnings included."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "template.yaml"
CACHE = ROOT / ".lint-cache"


@dataclass(frozen=True)
class Linted:
    returncode: int  # cfn-lint's: a bit each for errors (2), warnings (4) and informational findings (8)
    output: str
    remembered: bool = False  # a clean pass of these very bytes, not run again

    @property
    def errors(self) -> list[str]:
        return [line for line in self.output.splitlines() if ":E" in line or line.startswith("E")]


def _stamp(template: Path) -> Path:
    key = hashlib.sha256(template.read_bytes() + f"\0cfn-lint {version('cfn-lint')}".encode()).hexdigest()
    return CACHE / f"cfn-lint-{key[:32]}.clean"


def lint(template: Path = TEMPLATE) -> Linted:
    stamp = _stamp(template)
    if stamp.is_file():
        return Linted(0, f"{template.name}: clean when cfn-lint last read these bytes", remembered=True)
    cfn_lint = Path(sys.executable).with_name("cfn-lint")
    result = subprocess.run([str(cfn_lint), "--format", "parseable", str(template)],
                            capture_output=True, text=True, timeout=300)
    if result.returncode == 0:
        CACHE.mkdir(exist_ok=True)
        partial = stamp.with_name(f".{stamp.name}.{os.getpid()}")  # renamed into place: never half a stamp
        partial.write_text(f"{template}\n")
        partial.replace(stamp)
    return Linted(result.returncode, result.stdout + result.stderr)


def main() -> int:
    linted = lint()
    print(linted.output.rstrip() or f"cfn-lint: {TEMPLATE.name} is clean")
    return 0 if linted.returncode == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
