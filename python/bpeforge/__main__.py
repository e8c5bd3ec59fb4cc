"""`python -m bpeforge` is the `bpeforge` command."""

import sys

from bpeforge.cli import main

sys.exit(main())
