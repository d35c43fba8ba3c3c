"""``python -m tabformer ...``: the command line (:mod:`tabformer.cli`)."""

import sys

from .cli import main

sys.exit(main())
