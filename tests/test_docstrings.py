"""Every public name has a numpydoc docstring that a reader of ``help()`` can use: functions
say their parameters (each one, ``queue`` included), what they return and what they raise;
classes their attributes or parameters; exceptions when they are raised; and no docstring
sends the reader to a module docstring that ``help()`` on the function cannot reach."""

import inspect
import re

import pytest

import oclla

SECTION = re.compile(r"^(\w[\w ]*)\n-{3,}$", re.M)


def sections(doc: str) -> dict:
    """{heading: body} of a numpydoc docstring."""
    found = {}
    marks = list(SECTION.finditer(doc))
    for mark, following in zip(marks, marks[1:] + [None]):
        found[mark.group(1)] = doc[mark.end():following.start() if following else len(doc)]
    return found


def documented_parameters(body: str) -> set:
    """Names documented in a Parameters section (``a : type`` or ``a, b`` lines)."""
    names = set()
    for line in body.splitlines():
        if line and not line[0].isspace():
            head = line.split(" : ")[0]
            names.update(n.strip() for n in head.split(","))
    return names


def public_objects():
    for name in oclla.__all__:
        obj = getattr(oclla, name)
        if not inspect.ismodule(obj) and (inspect.isfunction(obj) or inspect.isclass(obj)):
            yield f"oclla.{name}", obj
    for module_name in oclla.__all__:
        module = getattr(oclla, module_name)
        if not inspect.ismodule(module):
            continue
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if inspect.isfunction(obj) or inspect.isclass(obj):
                yield f"oclla.{module_name}.{name}", obj


PUBLIC = dict(public_objects())


def test_the_public_names_are_found():
    assert {"oclla.lu_factor", "oclla.get_queue", "oclla.Recording", "oclla.rfp.pack",
            "oclla.sparse.cholesky", "oclla.hybrid.cholesky"} <= set(PUBLIC)


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_numpydoc_sections(name):
    obj = PUBLIC[name]
    doc = inspect.getdoc(obj) or ""
    assert "module docstring" not in doc, f"{name} points at a module docstring"
    found = sections(doc)
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        assert "raised" in doc.lower(), f"{name}: say when it is raised"
        return
    if inspect.isclass(obj):
        assert {"Attributes", "Parameters"} & set(found), f"{name}: no Attributes/Parameters"
        return
    missing = {"Parameters", "Returns", "Raises"} - set(found)
    assert not missing, f"{name}: no {', '.join(sorted(missing))} section"
    wanted = {p for p in inspect.signature(obj).parameters if p not in ("self",)}
    undocumented = wanted - documented_parameters(found["Parameters"])
    assert not undocumented, f"{name}: parameters not documented: {sorted(undocumented)}"


def test_helpers_of_the_test():
    doc = "Summary.\n\nParameters\n----------\na, b : int\n    x\nqueue : q\n\nReturns\n-------\nr"
    found = sections(doc)
    assert set(found) == {"Parameters", "Returns"}
    assert documented_parameters(found["Parameters"]) == {"a", "b", "queue"}


def test_the_api_reference_is_current():
    """docs/api.md is what ``python docs/make_api.py`` makes from these docstrings."""
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "docs" / "make_api.py"
    spec = importlib.util.spec_from_file_location("make_api", path)
    make_api = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_api)
    text = make_api.render()
    for name in PUBLIC:
        assert f"### `{name}`" in text
    assert Path(make_api.OUT).read_text(encoding="utf-8") == text, \
        "docs/api.md is out of date: run python docs/make_api.py"
