"""``python -m conformance``: the same command as ``conformance``."""

import sys

from .cli import main

sys.exit(main())
