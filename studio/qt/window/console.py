"""The Python console dock (View ▸ Python Console, Ctrl+Shift+P): IPython running in the studio's own process, as
napari's console does, with the studio's objects at hand (:data:`BANNER` lists them).

Thread: GUI. qtconsole's in-process kernel executes each cell on the GUI thread, between two events of the
window's event loop. So the console never touches the simulation itself: ``sim`` is a
:class:`~studio.qt.run.handle.SimulationHandle`, whose every call waits for the worker thread to answer between
two steps; ``doc`` is the window's :class:`~studio.qt.document.document.SceneDocument`, whose edits are the same
undoable commands the inspector makes (Ctrl+Z undoes them, and the worker applies them at a step boundary).
``model`` is refreshed before each cell to the model running then.

Made the first time it is shown (importing IPython and starting the kernel take about a second), so a studio
whose console is never opened does not pay for it. qtconsole talks to Qt through qtpy, which picks the first Qt
binding it finds installed; this module makes it pick PySide6, the studio's, before qtpy is first imported (a
second binding's widgets in this process would abort it).
"""
from __future__ import annotations

import os
import sys

import numpy as np
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QDockWidget

import core
from core.scene import SceneError

from studio.document import edits
from studio.qt.run.handle import SimulationHandle

__all__ = ["ConsoleDock", "BANNER", "namespace"]

BANNER = """limbstudio console: IPython in the studio's process. At hand:
  sim     the running simulation, through its worker thread: sim.time, sim.state, sim.step(n),
          sim.records() (every step's t, q, qd, forces, energies …), sim.play(), sim.pause(), sim.reset(),
          sim.seek(t), sim.call(f) (f(simulation) run on the worker between two steps)
  model   the core.Model running now
  doc     the scene document: doc.spec, doc.set_value(("forces", 0, "stiffness"), 40) — undoable with
          Ctrl+Z like an edit in the inspector; doc.apply(edits.rename(doc.spec, ("bodies", 0), "arm"), "Rename")
  edits   studio.document.edits, the edits of a spec;  core, np  the physics library, NumPy
Plot:  r = sim.records();  import pyqtgraph as pg; pg.plot(r["t"], r["q"][:, 0])
       or  import matplotlib.pyplot as plt; plt.plot(r["t"], r["q"]); plt.show()   (a window; the studio runs on)
"""


def _use_pyside6() -> None:
    """Make qtpy (qtconsole's Qt layer) use PySide6; a clear error if it was imported for another binding."""
    if "qtpy" not in sys.modules:
        os.environ["QT_API"] = "pyside6"
        # ipykernel imports debugpy, whose check of frozen modules prints four lines on stderr; an in-process
        # kernel has no debugger to serve
        os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
        return
    import qtpy
    if qtpy.API_NAME != "PySide6":
        raise RuntimeError(f"the console needs qtpy on PySide6, but it was imported for {qtpy.API_NAME} "
                           "(unset QT_API or set it to pyside6)")


def namespace(window) -> dict:
    """The names a console of ``window`` starts with."""
    return {"sim": SimulationHandle(window.sim_thread, window.plots.records), "doc": window.document,
            "model": _running_model(window), "edits": edits, "core": core, "np": np}


def _running_model(window):
    latest = window.sim_thread.latest
    return latest.model if latest is not None and latest.model is not None else window.viewport.model


def _show_scene_error(shell, kind, value, tb, tb_offset=None):
    """A rejected edit: its problems, without a traceback."""
    print(f"{kind.__name__}: {value}", file=sys.stderr)


class ConsoleDock(QDockWidget):
    """GUI thread. The console of ``window`` (a :class:`~studio.qt.window.main_window.MainWindow`) in a dock;
    ``console`` is the qtconsole widget, ``shell`` the in-process IPython shell. ``closed`` is emitted when the
    user closes the dock."""

    closed = Signal()

    def __init__(self, window):
        super().__init__("Python Console", window)
        self.setObjectName("console_dock")
        _use_pyside6()
        from qtconsole.inprocess import QtInProcessKernelManager
        from qtconsole.rich_jupyter_widget import RichJupyterWidget

        self._window = window
        self.kernel_manager = QtInProcessKernelManager()
        self.kernel_manager.start_kernel(show_banner=False)
        self.kernel_manager.kernel.gui = "qt"
        self.shell = self.kernel_manager.kernel.shell
        # matplotlib in interactive mode on its Qt backend, as IPython's %matplotlib qt: figures show without
        # blocking, run by the window's own event loop (else plt.show() would start a second one: Qt refuses)
        self.shell.enable_matplotlib()
        self.shell.banner1, self.shell.banner2 = BANNER, ""   # the kernel's banner is the one shown
        self.shell.push(namespace(window))
        self.shell.events.register("pre_execute", self._refresh)
        self.shell.set_custom_exc((SceneError,), _show_scene_error)
        self.kernel_client = self.kernel_manager.client()
        self.kernel_client.start_channels()
        self.console = RichJupyterWidget()
        self.console.setObjectName("console")
        self.console.banner = ""
        # the text field inside takes the keys when the console is given the focus (qtconsole's widget is only
        # its frame)
        self.console.setFocusProxy(self.console._control)
        self.console.kernel_manager = self.kernel_manager
        self.console.kernel_client = self.kernel_client
        self.setWidget(self.console)

    def _refresh(self) -> None:
        self.shell.user_ns["model"] = _running_model(self._window)

    def execute(self, source: str) -> None:
        """Run ``source`` as if typed (shown in the console, with its output)."""
        self.console.execute(source)

    def closeEvent(self, event) -> None:
        super().closeEvent(event)
        self.closed.emit()

    def shutdown(self) -> None:
        """Stop the kernel (the window closes)."""
        self.kernel_client.stop_channels()
        self.kernel_manager.shutdown_kernel()
