"""limbstudio's desktop studio: a PySide6 application that drives :mod:`core` from a worker thread.

Modules, and the thread each lives on:

- :mod:`studio.meshes` — triangle meshes of the model's shapes (plain data; any thread).
- :mod:`studio.framing` — shape poses, display orientation and camera framing (plain NumPy; any thread).
- :mod:`studio.worker` — :class:`~studio.worker.SimulationWorker`, the only owner of the simulation (worker thread),
  and the immutable messages that cross threads.
- :mod:`studio.simthread` — :class:`~studio.simthread.SimulationThread`, the GUI's handle on the worker (GUI thread).
- :mod:`studio.viewport` — the 3D view (GUI thread).
- :mod:`studio.main_window` — the main window (GUI thread).
- :mod:`studio.__main__` — ``python -m studio [SCENE]``.
"""
from pathlib import Path

#: Where the example scenes live (the repository root's ``scenes/``).
SCENES_DIR = Path(__file__).resolve().parent.parent / "scenes"
#: The scene the studio opens when none is named.
DEFAULT_SCENE = SCENES_DIR / "three_link_arm.json"
