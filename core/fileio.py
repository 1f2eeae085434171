"""Atomic file writes: a temporary file in the target's folder, flushed to disk, then renamed over the target,
so a reader never sees a half-written file and a failure leaves the previous file untouched. A target that is a
symbolic link is written through (its target is replaced, the link stays); an existing file keeps its mode, a
new one gets 0666 less the umask, as ``open`` would give it.

Whole directories (a run's output) are staged the same way: :func:`staging_directory` makes a hidden folder
beside the target, and :func:`publish_directory` renames it into place — atomically exchanged with an existing
target (Linux ``renameat2(RENAME_EXCHANGE)``), so the path holds either the old complete folder or the new one
at every instant, even under ``kill -9``. Replacing is limited to what is recognisably an earlier output of the
same command: :func:`mark_output` writes a marker listing the folder's files, and :func:`replace_refusal` says
why anything else — a folder without the marker, one with files the command did not write, the folder the
process works in or one above it — would not be replaced.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

__all__ = ["not_a_file", "read_regular_file", "atomic_writer", "atomic_write_bytes", "atomic_write_text", "umask", "new_file_mode", "staging_directory",
           "publish_directory", "fsync_directory", "mark_output", "replace_refusal", "check_replaceable", "NotReplaced", "OUTPUT_MARKER"]

#: The file that marks a folder as an output of one of limbstudio's commands (``--force`` replaces only these).
OUTPUT_MARKER = ".limbstudio-output.json"


def not_a_file(mode: int) -> str | None:
    """What a path of ``st_mode`` ``mode`` is if not a regular file ("a pipe (FIFO)", "a device" …), else None."""
    import stat
    if stat.S_ISREG(mode):
        return None
    return ("a folder" if stat.S_ISDIR(mode) else "a pipe (FIFO)" if stat.S_ISFIFO(mode) else
            "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "not a file")


def read_regular_file(path: str | os.PathLike, limit: int) -> bytes:
    """At most ``limit`` + 1 bytes of the regular file ``path`` (one more than the limit tells a caller it is
    too large). A FIFO, a device, a socket or a folder raises ``OSError`` ("not a regular file …") without
    blocking: the file is opened non-blocking and looked at before anything is read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        what = not_a_file(mode)
        if what is not None:
            raise OSError(21 if what == "a folder" else 22, f"not a regular file ({what})", str(path))
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=True) as f:
            fd = -1
            return f.read(limit + 1)
    finally:
        if fd >= 0:
            os.close(fd)


def umask() -> int:
    """The process's umask, read without changing it where Linux tells it (``/proc/self/status``)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def new_file_mode() -> int:
    return 0o666 & ~umask()


def _written_path(path: Path) -> Path:
    """Where writing ``path`` lands: through a symbolic link to its (final) target."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


@contextmanager
def atomic_writer(path: str | os.PathLike, mode: int | None = None):
    """A binary file to write ``path``'s new content into (streamed, any size): it replaces ``path`` atomically
    when the block ends, or is removed if the block raises. The file keeps its mode if it exists; a new one gets
    ``mode``, or 0666 less the umask. A symbolic link is followed: its target is written and the link kept."""
    target = _written_path(Path(path))
    try:
        mode = os.stat(target).st_mode & 0o7777
    except OSError:
        mode = new_file_mode() if mode is None else mode
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def atomic_write_bytes(path: str | os.PathLike, data: bytes, mode: int | None = None) -> Path:
    """Write ``data`` to ``path`` atomically (:func:`atomic_writer`). Returns ``path``."""
    with atomic_writer(path, mode) as f:
        f.write(data)
    return Path(path)


def atomic_write_text(path: str | os.PathLike, text: str, mode: int | None = None) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"), mode)


def fsync_directory(path: str | os.PathLike) -> None:
    """Flush a folder's entries (its renames) to disk; a no-op where folders cannot be opened."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def staging_directory(target: str | os.PathLike) -> Path:
    """A new, empty hidden folder beside ``target`` (``.NAME.partial-PID-XXXX``, mode 0777 less the umask) to
    write into before :func:`publish_directory`. Creates ``target``'s parent folders, and removes the staging
    folders of ``target`` that processes no longer running left behind (killed runs)."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_abandoned(target)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-{os.getpid()}-", dir=target.parent))
    os.chmod(tmp, 0o777 & ~umask())
    return tmp


def _remove_abandoned(target: Path) -> None:
    """Remove ``target``'s staging folders whose process (the PID in their name) is gone; never raises."""
    import re
    prefix = f".{target.name}.partial-"
    try:
        entries = list(target.parent.iterdir())
    except OSError:
        return
    for entry in entries:
        match = re.fullmatch(r"(\d+)-\w+", entry.name[len(prefix):]) if entry.name.startswith(prefix) else None
        if match is None or entry.is_symlink() or not entry.is_dir():
            continue
        try:
            os.kill(int(match.group(1)), 0)
        except ProcessLookupError:
            shutil.rmtree(entry, ignore_errors=True)
        except (PermissionError, OverflowError, ValueError):
            pass                                         # (alive under another user, or not a PID)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux renameat2 RENAME_EXCHANGE); False where that is not available."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (38, 22, 95):                  # ENOSYS, EINVAL (flag or file system), EOPNOTSUPP
        return False
    raise OSError(err, os.strerror(err), str(b))


def mark_output(folder: str | os.PathLike, command: str) -> None:
    """Mark the staged ``folder`` as ``command``'s output, listing the files in it now (call it last)."""
    folder = Path(folder)
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if not p.is_dir())
    (folder / OUTPUT_MARKER).write_text(json.dumps({"command": command, "files": files}, indent=1) + "\n",
                                        encoding="utf-8")


def _listing(names: list[str], limit: int = 3) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def replace_refusal(target: str | os.PathLike, command: str) -> str | None:
    """Why replacing the existing ``target`` with a new output of ``command`` is refused, naming what would have
    been removed; None when ``target`` is absent or an earlier output of ``command`` with only its own files."""
    target = Path(target)
    if not os.path.lexists(target):
        return None
    if target.is_symlink() or not target.is_dir():
        return f"{target} is not an output folder of '{command}' (it is a {'link' if target.is_symlink() else 'file'})"
    here = Path.cwd().resolve()
    if target.resolve() == here or target.resolve() in here.parents:
        return f"{target} holds the folder this command runs in ({here})"
    try:
        marker = json.loads((target / OUTPUT_MARKER).read_text(encoding="utf-8"))
        own = set(marker["files"]) if marker.get("command") == command else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        own = None
    found = sorted(p.relative_to(target).as_posix() + ("/" if p.is_dir() else "") for p in target.iterdir()
                   if p.name != OUTPUT_MARKER)
    if own is None:
        if not found:
            return None                                     # an empty folder: nothing to lose
        return (f"{target} is not an earlier output of '{command}' (no {OUTPUT_MARKER} of it); replacing it would "
                f"remove {_listing(found)}")
    foreign = sorted(p.relative_to(target).as_posix() for p in target.rglob("*")
                     if p.name != OUTPUT_MARKER and not p.is_dir() and p.relative_to(target).as_posix() not in own)
    if foreign:
        return f"{target} holds files that '{command}' did not write: {_listing(foreign)}"
    return None


class NotReplaced(PermissionError):
    """An existing output that ``--force`` may not replace; ``strerror`` says why (:func:`replace_refusal`)."""


def check_replaceable(target: str | os.PathLike, command: str, replace: bool) -> None:
    """Nothing if ``command`` may write its output to ``target``: absent, or (with ``replace``) an earlier output
    of ``command`` that :func:`replace_refusal` allows. Else ``FileExistsError`` (it exists, no ``replace``) or
    :class:`NotReplaced` whose ``strerror`` is the refusal's reason."""
    if not os.path.lexists(target):
        return
    if not replace:
        raise FileExistsError(17, "the output exists (use --force to replace it)", str(target))
    refusal = replace_refusal(target, command)
    if refusal:
        raise NotReplaced(1, refusal, str(target))


def publish_directory(staged: str | os.PathLike, target: str | os.PathLike, replace: bool = False,
                      command: str | None = None) -> None:
    """Move the complete folder ``staged`` to ``target``. A target that exists must be replaceable
    (:func:`check_replaceable`); then the two are exchanged atomically and the old one removed. Where the
    exchange is not available the old target is first renamed aside (a crash between the two renames leaves it
    complete under ``.NAME.old-XXXX``)."""
    staged, target = Path(staged), Path(target)
    fsync_directory(staged)
    if not os.path.lexists(target):
        os.rename(staged, target)                       # (an empty folder made meanwhile is replaced, POSIX)
        fsync_directory(target.parent)
        return
    check_replaceable(target, command or "", replace)
    if _exchange(staged, target):
        fsync_directory(target.parent)
        _remove(staged)                                   # (now the old output)
        return
    aside = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
    os.rmdir(aside)
    os.rename(target, aside)
    os.rename(staged, target)
    fsync_directory(target.parent)
    _remove(aside)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except OSError:
            pass
