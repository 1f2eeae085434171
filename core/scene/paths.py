"""Paths of the robot files a scene document includes (:mod:`core.scene.robots`): which files are robot
descriptions, a file made absolute against a document's folder or relative to it again, and a JSON path into the
flat scene of an include reported as a path into the document. Plain functions with no dependencies, so the
document layer (:mod:`core.scene.io`) and the robot readers both build on them.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["ROBOT_SUFFIXES", "ROBOT_SECTIONS", "resolve_file", "relative_file", "remap_path"]

ROBOT_SUFFIXES = (".urdf", ".xml")
#: What a robot file brings into the scene that includes it, before the document's own items.
ROBOT_SECTIONS = ("bodies", "constraints", "forces")



def resolve_file(file: str, folder: str | os.PathLike | None) -> str:
    """``file`` as an absolute path: as it is if absolute, else relative to ``folder`` (default: the current
    folder)."""
    p = Path(file).expanduser()
    if not p.is_absolute():
        p = Path(folder if folder is not None else Path.cwd()) / p
    return str(Path(os.path.normpath(p.absolute())))


def relative_file(file: str, folder: str | os.PathLike) -> str:
    """``file`` relative to ``folder`` when it can be written so (same drive), else as it is."""
    try:
        return Path(os.path.relpath(file, folder)).as_posix()
    except ValueError:
        return file


_INDEX = re.compile(r"^\$\.(bodies|constraints|forces)\[(\d+)\](.*)$")


def remap_path(path: str, robot_counts: dict[str, int]) -> str:
    """A JSON path into the flat scene of :func:`expand`, as a path into the document: items that come from the
    robot (the first ``robot_counts[section]`` of its bodies, constraints and forces) are reported at
    ``$.robot``."""
    m = _INDEX.match(path)
    if not m:
        return path
    section, i, rest = m.group(1), int(m.group(2)), m.group(3)
    n = robot_counts.get(section, 0)
    if i < n:
        return f"$.robot (the robot's {section}[{i}]{rest})"
    return f"$.{section}[{i - n}]{rest}"
