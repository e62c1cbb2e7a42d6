"""Docstrings assembled from shared sections, so that text several objects share is written once."""

import re
from typing import Callable, Mapping, TypeVar

T = TypeVar("T")

_SECTION_LINE = re.compile(r"^ *<<(\w+)>>\n", flags=re.MULTILINE)


def fill_sections(sections: Mapping[str, str]) -> Callable[[T], T]:
    """A decorator replacing each ``<<name>>`` line of a docstring by ``sections[name]``.

    Each section is written with the indentation of the docstring it goes
    into and ends with a newline; an unknown name raises a KeyError at import.
    """
    def fill(obj: T) -> T:
        if obj.__doc__ is not None:  # None under python -OO
            obj.__doc__ = _SECTION_LINE.sub(lambda match: sections[match.group(1)], obj.__doc__)
        return obj
    return fill
