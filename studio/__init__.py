"""limbstudio's desktop studio: a PySide6 application that drives :mod:`core` from a worker thread.

Rooms (DESIGN.md "Threading in the studio"; STYLE.md's MuJoCo and napari patterns: Qt-free models, a worker
that owns the simulation, immutable messages between them). The Qt-free packages, usable on any thread and
without a display:

- :mod:`studio.document` — edits of a scene spec as pure functions, saving, kinds and units;
- :mod:`studio.run` — messages between the threads, stepping, the timeline, reloads, the plots' samples and
  history, records for exports, events, the log of notices the Messages dock shows;
- :mod:`studio.geometry` — poses, camera framing, glyphs and picking as NumPy.

Everything that imports Qt is under :mod:`studio.qt`, in the same rooms: ``window`` (the main window and its
docks), ``viewport`` (the 3D view), ``run`` (the worker thread, recording, the kernels' first compile) and
``document`` (the document and its undo stack, the selection). :mod:`studio.__main__` is ``python -m studio
[SCENE]``; :mod:`studio.headless` renders pictures and movies without a window.
"""
import os as _os
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):      # (as core/__init__.py: before pyqtgraph loads numpy)
    _os.environ.setdefault(_var, "1")

#: Where the example scenes live (the repository root's ``scenes/``).
SCENES_DIR = Path(__file__).resolve().parent.parent / "scenes"
#: The scene the studio opens when none is named: the spatial three-link arm of thesis fig. 2.9 started at a
#: singular configuration with its tip nailed and a spring tipping it over (forces, singular values and the
#: deviation's decay all show in the first second).
DEFAULT_SCENE = SCENES_DIR / "arm_nail_singular.json"
