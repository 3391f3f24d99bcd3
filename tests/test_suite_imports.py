"""The test suite's own imports: test modules share helpers through uniquely named modules.

pytest imports every conftest.py under the plain name ``conftest`` (tests/ and tests/viewer/
each have one), so ``from conftest import spd`` binds to whichever conftest was imported
last: a viewer test collected first in the same process made it fail.  Helper modules sit
on sys.path by their bare name too, so two with one name in different folders would clash
the same way.
"""

import ast
import collections
import pathlib

TESTS = pathlib.Path(__file__).parent


def _modules():
    return sorted(p for p in TESTS.rglob("*.py") if "__pycache__" not in p.parts)


def test_no_module_imports_conftest():
    found = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([node.module] if isinstance(node, ast.ImportFrom)
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            if any(n and n.split(".")[0] == "conftest" for n in names):
                found.append(f"{path.relative_to(TESTS)}:{node.lineno}")
    assert not found, f"import helpers from linalg_helpers, not conftest: {found}"


def test_helper_module_names_are_unique():
    by_name = collections.defaultdict(list)
    for path in _modules():
        if path.name != "conftest.py" and not path.name.startswith("test_"):
            by_name[path.stem].append(str(path.relative_to(TESTS)))
    assert {k: v for k, v in by_name.items() if len(v) > 1} == {}
