"""Run a solutions file's answers through its lesson's checkers.

Used as ``python tutorials/solutions/lessonNN.py``: each solutions file calls
:func:`check_all` with its own path when run as a script.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

TUTORIALS = Path(__file__).resolve().parent.parent


def answers(module) -> dict:
    """``{exercise number: answer}`` from a solutions module's ``answer_N`` names."""
    return {int(name.split("_")[1]): value for name, value in vars(module).items()
            if name.startswith("answer_") and name.split("_")[1].isdigit()}


def check_all(solution_file) -> None:
    """Check every ``answer_N`` of ``solution_file`` with its lesson's checker."""
    if str(TUTORIALS) not in sys.path:
        sys.path.insert(0, str(TUTORIALS))
    from _checks import checkers
    lesson = Path(solution_file).stem
    checks = checkers(importlib.import_module(f"_checks.{lesson}"))
    given = answers(sys.modules["__main__"])
    ok = [checks[k](given[k]) for k in sorted(checks)]
    sys.exit(0 if all(ok) and sorted(given) == sorted(checks) else 1)
