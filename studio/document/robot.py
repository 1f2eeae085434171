"""The scene of a document's included robot file, read for showing it (the scene tree lists its links, the
control panel its actuators).

Thread: GUI (warnings' filters are process-wide). The importer's warnings are not repeated on each read: they are
reported where the file is opened or the scene compiled (:func:`studio.run.notices.caught_import_warnings`).
"""
from __future__ import annotations

__all__ = ["included_robot"]


def included_robot(spec):
    """``spec``'s included robot file as a :class:`core.scene.Scene` (the include's overrides applied), or None:
    no include, or one that cannot be read (the document's check names that at its field)."""
    if getattr(spec, "robot", None) is None:
        return None
    from core.scene import SceneError
    from core.scene.robots import robot_scene
    from studio.run.notices import caught_import_warnings
    try:
        robot, _said_at_open = caught_import_warnings(robot_scene, spec.robot)
    except SceneError:
        return None
    return robot
