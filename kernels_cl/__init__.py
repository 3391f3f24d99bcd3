"""OpenCL C 1.2 sources of oclla, shipped as package data.

Each ``*.cl`` file holds one kernel family; ``common.h`` holds the shared
macros (``real`` from ``PRECISION``, index helpers), other ``*.h`` files hold
device functions shared by several families (``rfp.h``: the packed layout).
Sources are read with :mod:`importlib.resources`, so they are found the same
way from a checkout, a wheel or a zip.
"""

import re
from importlib import resources

_INCLUDE = re.compile(r'^#include "([A-Za-z0-9_]+\.h)"[ \t]*$', re.MULTILINE)


def read_source(name: str) -> str:
    """Return the text of ``kernels_cl/<name>`` with its ``#include "x.h"`` lines inlined.

    Each header is inlined once, at its first inclusion (headers may include
    headers).  Inlining (instead of ``-I``) makes the program text
    self-contained, so pyopencl's on-disk binary cache sees header changes too.
    """
    root = resources.files(__name__)
    seen: set = set()

    def expand(text: str) -> str:
        def inline(match):
            header = match.group(1)
            if header in seen:
                return ""
            seen.add(header)
            return expand(root.joinpath(header).read_text(encoding="utf-8"))
        return _INCLUDE.sub(inline, text)

    return expand(root.joinpath(name).read_text(encoding="utf-8"))


def list_sources() -> list[str]:
    """Names of all kernel family files (``*.cl``)."""
    return sorted(p.name for p in resources.files(__name__).iterdir()
                  if p.name.endswith(".cl"))
