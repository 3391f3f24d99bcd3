"""OpenCL C 1.2 sources of oclla, shipped as package data.

Each ``*.cl`` file holds one kernel family; ``common.h`` holds the shared
macros (``real`` from ``PRECISION``, index helpers).  Sources are read with
:mod:`importlib.resources`, so they are found the same way from a checkout,
a wheel or a zip.
"""

from importlib import resources

_INCLUDE_LINE = '#include "common.h"'


def read_source(name: str) -> str:
    """Return the text of ``kernels_cl/<name>`` with ``common.h`` inlined.

    Inlining (instead of ``-I``) makes the program text self-contained, so
    pyopencl's on-disk binary cache sees header changes too.
    """
    root = resources.files(__name__)
    text = root.joinpath(name).read_text(encoding="utf-8")
    if _INCLUDE_LINE in text:
        header = root.joinpath("common.h").read_text(encoding="utf-8")
        text = text.replace(_INCLUDE_LINE, header, 1)
    return text


def list_sources() -> list[str]:
    """Names of all kernel family files (``*.cl``)."""
    return sorted(p.name for p in resources.files(__name__).iterdir()
                  if p.name.endswith(".cl"))
