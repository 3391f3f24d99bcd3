"""``python -m oclla.viewer``: the same as ``oclla-viewer``."""

import sys

from .app import main

sys.exit(main())
