"""``python -m tqgen`` = the ``tqgen`` command."""
import sys

from tqgen.cli import main

sys.exit(main())
