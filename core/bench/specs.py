"""What the bench's SPEC readers (:mod:`core.bench.sweep`, :mod:`core.bench.cylinder`) share: the error a SPEC
that cannot be run raises, the JSON path of a validation error's location, and validating a SPEC against its
schema with every problem named at its path."""
from __future__ import annotations

from pydantic import ValidationError

from ..scene.io import Problem

__all__ = ["SweepSpecError", "spec_path", "validated"]


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


def validated(schema, raw, source: str):
    """``schema.model_validate(raw)``, or :class:`SweepSpecError` naming each problem at its JSON path (an unknown
    field with the fields there are)."""
    try:
        return schema.model_validate(raw)
    except ValidationError as exc:
        problems = []
        for err in exc.errors(include_url=False):
            message = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                message = "unknown field (check its spelling); fields: " + ", ".join(schema.model_fields)
            problems.append(Problem(spec_path(err["loc"]), message, err.get("input"), err["type"] != "missing"))
        raise SweepSpecError(problems, source) from None
