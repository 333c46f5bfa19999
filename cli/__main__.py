"""`python -m cli` runs the `hwgen` command line."""
import sys

from cli.main import main

sys.exit(main())
