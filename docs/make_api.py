"""Write docs/api.md, the API reference, from the docstrings (no dependency beyond oclla).

    python docs/make_api.py            # writes docs/api.md
    python docs/make_api.py --check    # exit status 1 if docs/api.md is not up to date

Every name in ``oclla.__all__`` and ``oclla.rfp.__all__`` gets its signature and its
docstring as ``help()`` shows it; the public modules in ``oclla.__all__``
(``oclla.accuracy``, ``oclla.blas``) get their module docstring and their public
functions.
"""

from __future__ import annotations

import inspect
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "docs", "api.md")


def _entry(qualname: str, obj) -> list:
    lines = [f"### `{qualname}`", ""]
    try:
        signature = str(inspect.signature(obj))
    except (TypeError, ValueError):
        signature = None
    kind = "class " if inspect.isclass(obj) else ""
    if signature is not None:
        lines += ["```python", f"{kind}{qualname}{signature}", "```", ""]
    doc = inspect.getdoc(obj) or "(no docstring)"
    lines += ["```text", doc, "```", ""]
    return lines


def _public_functions(module) -> list:
    names = getattr(module, "__all__", None) or [
        n for n, o in vars(module).items()
        if not n.startswith("_") and (inspect.isfunction(o) or inspect.isclass(o))
        and getattr(o, "__module__", None) == module.__name__]
    return sorted(names)


def render() -> str:
    """The whole page."""
    sys.path.insert(0, ROOT)
    import oclla
    from oclla import rfp
    summary = inspect.getdoc(oclla).split("\n\n")[0]
    lines = ["# oclla API reference", "",
             "Made from the docstrings by `python docs/make_api.py`; `help(oclla.NAME)` "
             "shows the same text.", "", summary, "", "## Functions and classes", ""]
    modules = []
    for name in oclla.__all__:
        obj = getattr(oclla, name)
        if inspect.ismodule(obj):
            modules.append(obj)
        elif inspect.isfunction(obj) or inspect.isclass(obj):
            lines += _entry(f"oclla.{name}", obj)
        else:
            lines += [f"### `oclla.{name}`", "", "```text",
                      f"{type(obj).__name__}: {sorted(obj) if isinstance(obj, dict) else obj}",
                      "```", ""]
    for module in sorted(set(modules) | {rfp}, key=lambda m: m.__name__):
        lines += [f"## `{module.__name__}`", "", "```text", inspect.getdoc(module) or "",
                  "```", ""]
        for name in _public_functions(module):
            obj = getattr(module, name)
            if inspect.isfunction(obj) or inspect.isclass(obj):
                lines += _entry(f"{module.__name__}.{name}", obj)
    return "\n".join(lines).rstrip() + "\n"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    text = render()
    if "--check" in argv:
        with open(OUT, encoding="utf-8") as f:
            if f.read() != text:
                print("docs/api.md is out of date: run python docs/make_api.py",
                      file=sys.stderr)
                return 1
        return 0
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
