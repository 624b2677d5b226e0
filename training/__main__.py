"""`python -m training`: see training.cli."""

import sys

from training.cli import main

sys.exit(main())
