"""``python -m benchmarks [--quick]``: run every benchmark and print the table."""

import sys

from benchmarks.run import main

sys.exit(main())
