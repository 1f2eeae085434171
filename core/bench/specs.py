"""What the bench's SPEC readers (:mod:`core.bench.sweep`, :mod:`core.bench.cylinder`) share: the error a SPEC
that cannot be run raises, and the JSON path of a validation error's location."""
from __future__ import annotations

from ..scene.io import Problem

__all__ = ["SweepSpecError", "spec_path"]


class SweepSpecError(ValueError):
    """A sweep SPEC that cannot be run; ``problems`` lists everything wrong, each with its JSON path."""

    def __init__(self, problems: list[Problem], source: str):
        self.problems = list(problems)
        self.source = source
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(f"{source}: {len(self.problems)} problem(s):\n{lines}")


def spec_path(loc) -> str:
    """The JSON path (``$.a[0].b``) of a pydantic error location, without the union members' tags."""
    out = "$"
    for el in loc:
        if isinstance(el, int):
            out += f"[{el}]"
        elif el in ("str", "ArmEntry", "dict[str,any]") or "[" in str(el):
            continue
        else:
            out += f".{el}"
    return out
