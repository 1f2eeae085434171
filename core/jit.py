"""The compiler for the hot loops, and the small spatial operations the kernels share.

Kernels are ``numba.njit(cache=True)`` functions over plain arrays (no Python objects inside), compiled on
first use and cached on disk, so only the first run on a machine pays the compile time. The spatial operations
work on a parent→child transform stored as ``(E, r)``: ``E = R_PCᵀ`` (3x3) and ``r = p_PC`` (the child origin in
parent coordinates); in Featherstone's notation ``X = rot(E) xlt(r)``::

    X v       = [E ω;  E (v − r × ω)]                  motion, parent → child
    Xᵀ f      = [Eᵀn + r × Eᵀf;  Eᵀf]                  force, child → parent  (X* = X⁻ᵀ)

The cache lives in ``~/.cache/limbstudio/numba/<hash of the kernels' sources>`` (or ``NUMBA_CACHE_DIR``); only
the files that can change compiled code are hashed (:func:`_kernel_sources`). Set
``LIMBSTUDIO_NO_JIT=1`` to run the same kernels as plain Python (for debugging; very slow).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import numpy as np

_RELATIVE_IMPORT = re.compile(r"^[ \t]*from[ \t]+(\.+)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)", re.M)


def _kernel_sources(package: Path) -> list[Path]:
    """The files whose text can change compiled code: every module that defines a kernel (``njit``) and, closed
    under relative imports, every module those import (constants, named-tuple layouts, inlined helpers). Scene
    reading, records, the command line and the studio are not among them, so editing those keeps the cache."""
    files = {p.resolve() for p in package.rglob("*.py")}
    todo = [p for p in files if re.search(r"@njit|\bnjit\(", p.read_text(encoding="utf-8"))]
    keep: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in keep:
            continue
        keep.add(path)
        for dots, module, names in _RELATIVE_IMPORT.findall(path.read_text(encoding="utf-8")):
            base = path.parents[len(dots) - 1]
            mod = base.joinpath(*module.split(".")) if module else base
            for cand in [mod.with_suffix(".py"), mod / "__init__.py",
                         *(mod / f"{name.split()[0]}.py" for name in re.findall(r"\w+(?:\s+as\s+\w+)?", names))]:
                if cand.resolve() in files:
                    todo.append(cand.resolve())
    return sorted(keep)


def _source_keyed_cache_dir() -> str:
    """Numba's on-disk cache keyed by a hash of the kernels' sources (:func:`_kernel_sources`): numba checks only
    the timestamp of the file that defines a kernel, not of the helpers it inlines from other files, so a cache
    shared across versions could serve stale machine code. Honours NUMBA_CACHE_DIR when set."""
    package = Path(__file__).resolve().parent
    h = hashlib.sha1(str(package).encode())             # numba's index names the source's path: one per checkout
    for path in _kernel_sources(package):
        h.update(path.relative_to(package).as_posix().encode())
        h.update(path.read_bytes())
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "limbstudio" / "numba"
    target = base / h.hexdigest()[:16]
    if not target.exists():
        _prune(base)
    return str(target)


def _prune(base: Path, days: float = 30.0) -> None:
    """Remove other versions' caches untouched for ``days`` (each is 30–60 MB); never raises."""
    import shutil
    import time
    try:
        for old in base.iterdir():
            if old.is_dir() and time.time() - old.stat().st_mtime > days * 86400:
                shutil.rmtree(old, ignore_errors=True)
    except OSError:
        pass


if os.environ.get("LIMBSTUDIO_NO_JIT"):
    def njit(*args, **kwargs):
        if args and callable(args[0]):
            return args[0]
        return lambda f: f
else:
    import numba
    from numba import njit as _njit

    if not os.environ.get("NUMBA_CACHE_DIR"):
        numba.config.CACHE_DIR = _source_keyed_cache_dir()

    def njit(*args, **kwargs):
        kwargs.setdefault("cache", True)
        kwargs.setdefault("nogil", True)
        kwargs.setdefault("error_model", "numpy")     # x/0 gives ±inf or NaN (caught as divergence), never raises
        if args and callable(args[0]):
            return _njit(**kwargs)(args[0])
        return _njit(*args, **kwargs)


def kernels_cached() -> bool:
    """Whether this version's compiled kernels are all in the on-disk cache, judged by the cache's own contents:
    :func:`core.warmup.warm` writes :data:`WARM_STAMP` there once every kernel is in, with the time stamp and size
    of each kernel source, which numba's index checks too. False before the first run on a machine (the first
    step then compiles them: minutes), after a compile that was cut off, and when a source was touched since."""
    if os.environ.get("LIMBSTUDIO_NO_JIT"):
        return True
    path = cache_dir()
    if path is None:
        return True
    try:
        return json.loads((path / WARM_STAMP).read_text()) == source_stamps()
    except (OSError, ValueError):
        return False


#: The file :func:`core.warmup.warm` writes into the cache once every kernel is in it.
WARM_STAMP = "warm-complete.json"


def source_stamps() -> dict[str, list]:
    """Each kernel source's modification time and size, as numba's cache index records them."""
    package = Path(__file__).resolve().parent
    out = {}
    for path in _kernel_sources(package):
        st = path.stat()
        out[path.relative_to(package).as_posix()] = [st.st_mtime, st.st_size]
    return out


def cache_dir() -> Path | None:
    """The directory numba caches this version's kernels in (None when caching is off)."""
    if os.environ.get("LIMBSTUDIO_NO_JIT"):
        return None
    import numba
    return Path(numba.config.CACHE_DIR) if numba.config.CACHE_DIR else None


class Entry:
    """A compiled entry point that Python calls often, called through its compiled overload's wrapper once it
    exists, which skips numba's argument typing (about 2 µs for a named tuple of arrays, 35 ns per plain array).

    Every argument must have exactly the types of the first call (float64/int64 C-contiguous arrays built by the
    core, named tuples of them, Python floats, ints and bools): the wrapper converts, it does not check. The
    first call of each process goes through the dispatcher, which compiles or loads the kernel from the cache.
    ``fast`` is that wrapper itself once it exists (the entry before): calling it saves this class's own call,
    about 0.2 µs, where that matters (``core.forward_dynamics``)."""

    __slots__ = ("dispatcher", "fast")

    def __init__(self, dispatcher):
        self.dispatcher = dispatcher
        self.fast = self

    def __call__(self, *args):
        fast = self.fast
        if fast is not self:
            return fast(*args)
        result = self.dispatcher(*args)
        overloads = getattr(self.dispatcher, "overloads", None)
        if overloads is not None and len(self.dispatcher.signatures) == 1:
            self.fast = overloads[self.dispatcher.signatures[0]].entry_point
        return result


def entry(f):
    """Decorator: ``njit`` ``f`` and wrap it as an :class:`Entry` (``.dispatcher`` is the numba function)."""
    return Entry(njit(f))


def inline(f):
    """A small helper that numba inlines into its callers' IR (ABA's pass 2 runs 1.7x faster than with calls:
    the per-link views and argument passing are optimized away)."""
    if os.environ.get("LIMBSTUDIO_NO_JIT"):
        return f
    return njit(inline="always")(f)


__all__ = ["inline", "as_f64", "kernels_cached", "njit", "Entry", "entry", "motion_x", "force_xt", "cross_motion", "cross_force", "matvec6", "quat_matrix"]


@inline
def quat_matrix(w, x, y, z):
    """The rotation matrix of the unit quaternion (w, x, y, z), row by row as nine scalars (kernels keep it in
    registers rather than in an array)."""
    return (1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
            2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
            2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y))


@inline
def motion_x(E, r, i, v, j, out, k):
    """out[k] ← X_i v[j] = [E ω; E (v_O − r × ω)] (parent → child, with E = E[i], r = r[i]); ``out`` may be ``v``
    (every input is read before the first write).

    These helpers take whole arrays and row indices, never per-link views such as ``v[j]``: numba counts a view's
    references atomically, which in the per-link loops cost more than the arithmetic."""
    w0, w1, w2 = v[j, 0], v[j, 1], v[j, 2]
    l0 = v[j, 3] - (r[i, 1] * w2 - r[i, 2] * w1)
    l1 = v[j, 4] - (r[i, 2] * w0 - r[i, 0] * w2)
    l2 = v[j, 5] - (r[i, 0] * w1 - r[i, 1] * w0)
    for a in range(3):
        out[k, a] = E[i, a, 0] * w0 + E[i, a, 1] * w1 + E[i, a, 2] * w2
        out[k, 3 + a] = E[i, a, 0] * l0 + E[i, a, 1] * l1 + E[i, a, 2] * l2


@inline
def force_xt(E, r, i, f, j, out, k):
    """out[k] ← X_iᵀ f[j] = [Eᵀn + r × (Eᵀf); Eᵀf] (a child force expressed in the parent); ``out`` may be ``f``."""
    n0 = E[i, 0, 0] * f[j, 0] + E[i, 1, 0] * f[j, 1] + E[i, 2, 0] * f[j, 2]
    n1 = E[i, 0, 1] * f[j, 0] + E[i, 1, 1] * f[j, 1] + E[i, 2, 1] * f[j, 2]
    n2 = E[i, 0, 2] * f[j, 0] + E[i, 1, 2] * f[j, 1] + E[i, 2, 2] * f[j, 2]
    g0 = E[i, 0, 0] * f[j, 3] + E[i, 1, 0] * f[j, 4] + E[i, 2, 0] * f[j, 5]
    g1 = E[i, 0, 1] * f[j, 3] + E[i, 1, 1] * f[j, 4] + E[i, 2, 1] * f[j, 5]
    g2 = E[i, 0, 2] * f[j, 3] + E[i, 1, 2] * f[j, 4] + E[i, 2, 2] * f[j, 5]
    r0, r1, r2 = r[i, 0], r[i, 1], r[i, 2]
    out[k, 0] = n0 + r1 * g2 - r2 * g1
    out[k, 1] = n1 + r2 * g0 - r0 * g2
    out[k, 2] = n2 + r0 * g1 - r1 * g0
    out[k, 3] = g0
    out[k, 4] = g1
    out[k, 5] = g2


@inline
def cross_motion(v, i, m, j, out, k):
    """out[k] ← v[i] × m[j] (motion cross product, crm(v) m); ``out`` may be either input."""
    v0, v1, v2, v3, v4, v5 = v[i, 0], v[i, 1], v[i, 2], v[i, 3], v[i, 4], v[i, 5]
    m0, m1, m2, m3, m4, m5 = m[j, 0], m[j, 1], m[j, 2], m[j, 3], m[j, 4], m[j, 5]
    out[k, 0] = v1 * m2 - v2 * m1
    out[k, 1] = v2 * m0 - v0 * m2
    out[k, 2] = v0 * m1 - v1 * m0
    out[k, 3] = v1 * m5 - v2 * m4 + v4 * m2 - v5 * m1
    out[k, 4] = v2 * m3 - v0 * m5 + v5 * m0 - v3 * m2
    out[k, 5] = v0 * m4 - v1 * m3 + v3 * m1 - v4 * m0


@inline
def cross_force(v, i, f, j, out, k):
    """out[k] ← v[i] ×* f[j] (force cross product, crf(v) f = −crm(v)ᵀ f); ``out`` may be either input."""
    v0, v1, v2, v3, v4, v5 = v[i, 0], v[i, 1], v[i, 2], v[i, 3], v[i, 4], v[i, 5]
    f0, f1, f2, f3, f4, f5 = f[j, 0], f[j, 1], f[j, 2], f[j, 3], f[j, 4], f[j, 5]
    out[k, 0] = v1 * f2 - v2 * f1 + v4 * f5 - v5 * f4
    out[k, 1] = v2 * f0 - v0 * f2 + v5 * f3 - v3 * f5
    out[k, 2] = v0 * f1 - v1 * f0 + v3 * f4 - v4 * f3
    out[k, 3] = v1 * f5 - v2 * f4
    out[k, 4] = v2 * f3 - v0 * f5
    out[k, 5] = v0 * f4 - v1 * f3


@inline
def matvec6(M, i, v, j, out, k):
    """out[k] ← M[i] v[j] for a stack of 6 x 6 matrices M (out must not be v)."""
    for a in range(6):
        s = 0.0
        for b in range(6):
            s += M[i, a, b] * v[j, b]
        out[k, a] = s


_F64 = np.dtype(float)


def as_f64(x) -> np.ndarray:
    """x as a writable C-contiguous float64 array for a kernel argument (no copy when it already is one; a
    read-only array is copied, since numba would compile every kernel again for it)."""
    if type(x) is np.ndarray and x.dtype is _F64:
        flags = x.flags
        if flags.c_contiguous and flags.writeable:
            return x
    return np.array(x, dtype=float, order="C")
