"""Exercise checkers for the tutorials, one module per lesson.

Every checker is a function ``check_exercise_N(answer) -> bool`` that prints
friendly feedback and returns True only for a correct answer.  It never
raises for a wrong answer or for a student's function that crashes: it says
what went wrong instead, so a notebook keeps running.  ``None`` (the
placeholder in the lessons) means "not answered yet".

A checker is written as a small test that raises :class:`Wrong` with a hint,
wrapped by :func:`exercise`.
"""

from __future__ import annotations

import functools
import math
import numbers

import numpy as np


class Wrong(Exception):
    """Raised inside a checker's test: the message is the hint shown to the student."""


def exercise(number: int, *, correct: str = ""):
    """Turn ``test(answer)`` (raises :class:`Wrong`) into ``check_exercise_<number>``."""
    def wrap(test):
        @functools.wraps(test)
        def check(answer) -> bool:
            if answer is None or answer is Ellipsis:
                print(f"Exercise {number}: not answered yet (replace None with your answer).")
                return False
            try:
                test(answer)
            except Wrong as exc:
                print(f"Exercise {number}: not yet. {exc}")
                return False
            except Exception as exc:          # the student's own code failed
                print(f"Exercise {number}: your answer raised "
                      f"{type(exc).__name__}: {exc}")
                return False
            print(f"Exercise {number}: correct!" + (f" {correct}" if correct else ""))
            return True
        check.__name__ = check.__qualname__ = f"check_exercise_{number}"
        check.exercise = number
        return check
    return wrap


def number(answer, what: str = "the answer") -> float:
    """``answer`` as a float, or :class:`Wrong` if it is not a single real number."""
    if isinstance(answer, (bool, np.bool_)) or not isinstance(answer, (numbers.Real, np.generic)):
        raise Wrong(f"{what} should be a number, got {type(answer).__name__}.")
    value = float(answer)
    if not math.isfinite(value):
        raise Wrong(f"{what} should be finite, got {value}.")
    return value


def integer(answer, what: str = "the answer") -> int:
    """``answer`` as an int, or :class:`Wrong` if it is not a whole number."""
    value = number(answer, what)
    if value != int(value):
        raise Wrong(f"{what} should be a whole number, got {value}.")
    return int(value)


def close(answer, expected: float, *, rtol: float, what: str = "the answer",
          hint: str = "") -> None:
    """:class:`Wrong` unless ``answer`` is within ``rtol`` (relative) of ``expected``."""
    value = number(answer, what)
    if not abs(value - expected) <= rtol * abs(expected):
        raise Wrong(f"{what} = {value:.6g} is not right." + (f" {hint}" if hint else ""))


def magnitude(answer, expected: float, *, factor: float = 3.0, what: str = "the estimate",
              hint: str = "") -> None:
    """:class:`Wrong` unless ``answer`` is within a ``factor`` of ``expected`` (an estimate).

    For order-of-magnitude questions: 1e-3 and 1.2e-3 are both fine estimates
    of 1.19e-3, and so are the values from either definition of machine
    epsilon (2^-23 or 2^-24 for float32).
    """
    value = number(answer, what)
    if not (value > 0 and expected / factor <= value <= expected * factor):
        raise Wrong(f"{what} = {value:.3g} is not the right order of magnitude."
                    + (f" {hint}" if hint else ""))


def equal(answer, expected: int, *, what: str = "the answer", hint: str = "") -> None:
    """:class:`Wrong` unless ``answer`` is exactly the whole number ``expected``."""
    if integer(answer, what) != expected:
        raise Wrong(f"{what} = {answer} is not right." + (f" {hint}" if hint else ""))


def callable_(answer, what: str = "your answer") -> None:
    """:class:`Wrong` unless ``answer`` is a function."""
    if not callable(answer):
        raise Wrong(f"{what} should be a function (def ...), got {type(answer).__name__}.")


def checkers(module) -> dict:
    """``{exercise number: checker}`` of a lesson's checker module."""
    return {f.exercise: f for f in vars(module).values()
            if callable(f) and hasattr(f, "exercise")}


def missing(requires) -> list[str]:
    """The entries of ``requires`` ("module" or "module:attribute") that are not importable.

    A lesson's checker module lists what the lesson needs beyond lessons 1-5
    in ``REQUIRES``; lessons and tests use this to say clearly what is absent.
    """
    import importlib
    import types

    absent = []
    for item in requires:
        module, _, attribute = item.partition(":")
        try:
            mod = importlib.import_module(module)
        except ImportError:
            absent.append(item)
            continue
        if attribute:
            obj = getattr(mod, attribute, None)       # a function or class, not a submodule
            if obj is None or isinstance(obj, types.ModuleType) or not callable(obj):
                absent.append(item)
    return absent
