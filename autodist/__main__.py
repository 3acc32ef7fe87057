"""``python -m autodist``: see :mod:`autodist.cli`."""

import sys

from autodist.cli import main

sys.exit(main())
