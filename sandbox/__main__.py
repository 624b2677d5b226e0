"""Entry point of `python -m sandbox`."""

import sys

from sandbox.cli import main

sys.exit(main())
