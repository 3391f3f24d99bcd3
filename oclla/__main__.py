"""``python -m oclla`` is the ``oclla`` command."""

import sys

from .cli import main

sys.exit(main())
