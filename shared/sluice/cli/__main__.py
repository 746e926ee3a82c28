"""``python -m sluice.cli``: the same command as ``sluice``."""

import sys

from sluice.cli import main

sys.exit(main())
