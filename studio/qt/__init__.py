"""Everything of the studio that imports Qt (PySide6, pyqtgraph, OpenGL), in four rooms that mirror the Qt-free
packages beside them:

- :mod:`studio.qt.window` — the main window and its docks: scene tree, inspector and its editors, plots, events,
  control panel, timeline bar, status bar, messages, the Python console, the File and Edit menus' actions, the
  recording dialog;
- :mod:`studio.qt.viewport` — the 3D view: shapes in one draw call, overlays, meshes, and the presenter that feeds
  it the worker's snapshots;
- :mod:`studio.qt.run` — the simulation worker on its own thread and its GUI-side handle, the console's ``sim``,
  recording, and the first run's compile of the core's kernels in a child process;
- :mod:`studio.qt.document` — the open scene document (spec, file, undo stack) and the shared selection.
"""
