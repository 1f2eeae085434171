"""Shared test set-up.

Qt: ``AA_ShareOpenGLContexts`` must be set before any QApplication exists, or a second GLViewWidget in the same
process draws nothing (shared/GUI-CI.md). On Linux the tests run under Xvfb (pytest-xvfb) on Qt's ``xcb``
platform; never on ``offscreen``, which cannot host a QOpenGLWidget.
"""
from __future__ import annotations

import gc
import os
import sys

import pytest

if sys.platform.startswith("linux"):
    # A developer's Wayland session would otherwise put the test windows on the real screen, not on Xvfb.
    os.environ.setdefault("QT_QPA_PLATFORM", "xcb")

try:
    from PySide6.QtCore import QCoreApplication, QEvent, Qt
except ImportError:  # the core's tests do not need Qt
    QCoreApplication = None
else:
    QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_teardown(item):
    """After pytest-qt has closed a test's widgets (``deleteLater``): delete them now and collect what they leave
    in reference cycles. Left to a later automatic collection, a test's OpenGL view was freed in the middle of
    another test's drawing, and its destructor released the context that drawing was using (a null picture)."""
    result = yield
    if "qtbot" in item.fixturenames and QCoreApplication is not None and QCoreApplication.instance() is not None:
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        gc.collect()
    return result


def pytest_sessionstart(session):
    """Compile (or load) every physics kernel before the first test, outside pytest's per-test faulthandler
    timeout: a cold cache takes minutes to compile, and a stack dump taken while numba compiles can crash."""
    if os.environ.get("LIMBSTUDIO_NO_JIT"):
        return
    from core.warmup import warm
    warm()


def _gl_required() -> bool:
    return os.environ.get("CI", "").lower() == "true" or os.environ.get("REQUIRE_GL") == "1"


@pytest.fixture(scope="session")
def gl_renderer(qapp) -> str:
    """The OpenGL renderer string (e.g. ``llvmpipe``) of a context made on an offscreen surface.

    Fails when no context can be made and CI=true or REQUIRE_GL=1; skips otherwise (a developer's machine
    without a display)."""
    from OpenGL import GL
    from PySide6.QtGui import QOffscreenSurface, QOpenGLContext, QSurfaceFormat

    def unavailable(why: str):
        message = f"no usable OpenGL context ({why}); QT_QPA_PLATFORM={os.environ.get('QT_QPA_PLATFORM')!r}, " \
                  f"DISPLAY={os.environ.get('DISPLAY')!r}"
        if _gl_required():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)

    surface = QOffscreenSurface()
    surface.setFormat(QSurfaceFormat.defaultFormat())
    surface.create()
    if not surface.isValid():
        unavailable("QOffscreenSurface is not valid")
    ctx = QOpenGLContext()
    ctx.setFormat(QSurfaceFormat.defaultFormat())
    if not ctx.create():  # check before anything touches GL: an FBO without a context segfaults
        unavailable("QOpenGLContext.create() failed")
    if not ctx.makeCurrent(surface):
        unavailable("QOpenGLContext.makeCurrent() failed")
    try:
        renderer = GL.glGetString(GL.GL_RENDERER).decode()
        version = GL.glGetString(GL.GL_VERSION).decode()
    finally:
        ctx.doneCurrent()
    major, minor = ctx.format().majorVersion(), ctx.format().minorVersion()
    if (major, minor) < (2, 1):
        unavailable(f"OpenGL {version} is older than the 2.1 pyqtgraph needs")
    surface.destroy()
    return f"{renderer} (OpenGL {version})"


@pytest.fixture(scope="session", autouse=True)
def _studio_settings_in_a_scratch_folder(tmp_path_factory):
    """The studio remembers recent files and its layout in an INI file: keep the tests' away from the user's."""
    if QCoreApplication is None:
        yield
        return
    from PySide6.QtCore import QSettings
    folder = tmp_path_factory.mktemp("settings")
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(folder))
    yield folder
