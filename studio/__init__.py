"""limbstudio's desktop studio: a PySide6 application that drives :mod:`core` from a worker thread.

Modules, and the thread each lives on (DESIGN.md "Threading in the studio"; STYLE.md's MuJoCo and napari
patterns: Qt-free models, a worker that owns the simulation, immutable messages between them):

- plain data, any thread, no Qt: :mod:`studio.meshes` (shape meshes), :mod:`studio.framing` (poses, camera
  framing), :mod:`studio.glyphs` (arrows, coils, frames), :mod:`studio.picking` (mouse rays and hits),
  :mod:`studio.edits` (undoable edits of a scene spec as pure functions), :mod:`studio.samples` (the plots'
  columns), :mod:`studio.history` (ring buffers), :mod:`studio.units`;
- the worker thread: :mod:`studio.worker` (:class:`~studio.worker.SimulationWorker`, the only owner of the model,
  state and simulation), :mod:`studio.reload` (edits applied at a step boundary), :mod:`core.drawing` (what to
  draw);
- crossing threads: :mod:`studio.messages` (frozen commands, snapshots, sample batches);
- the GUI thread: :mod:`studio.simthread` (the handle on the worker), :mod:`studio.document` (spec, file, undo
  stack), :mod:`studio.selection`, :mod:`studio.viewport`, :mod:`studio.overlays` and :mod:`studio.presenter`
  (3D view), :mod:`studio.scene_tree`, :mod:`studio.inspector` and :mod:`studio.editors`, :mod:`studio.item_actions`,
  :mod:`studio.plots`, :mod:`studio.control_panel`, :mod:`studio.status`, :mod:`studio.files`,
  :mod:`studio.recording` (its encoder on a thread of its own), :mod:`studio.kernels` (the first run's compile
  of the core's kernels, in a child process), :mod:`studio.main_window`;
- :mod:`studio.__main__` — ``python -m studio [SCENE]``.
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
