"""``python -m studio strip``: the frames of one interval in one picture (Kearney, Hansen & Cremer fig. 5) — a row
of N panels, each N·w wide with the body moved between neighbours, or one stroboscopic picture whose earlier poses
are fainter; a bad argument refused in one line with exit 2 and nothing written; the file complete or absent.

The layout and argument tests need no display; those marked ``gui`` draw with OpenGL (pytest-xvfb), as the other
headless tests (tests/test_studio_tools.py) do.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtGui import QColor, QImage

import core
from studio import SCENES_DIR
from studio import headless
from studio.geometry.framing import frame_motion, frame_scene
from studio.qt.run.strip import FAINTEST, overlay_image, row_image, strip_times

from test_studio import rgb_array

ROOT = Path(__file__).resolve().parent.parent
HOPPER = SCENES_DIR / "raibert_hopper.json"


def _flat(w, h, rgb) -> QImage:
    image = QImage(w, h, QImage.Format.Format_RGB888)
    image.fill(QColor(*rgb))
    return image


# ---- layout (no OpenGL) -----------------------------------------------------------------------------------------
def test_strip_times_are_evenly_spaced_and_include_both_ends():
    assert strip_times(1.0, 2.0, 5) == pytest.approx([1.0, 1.25, 1.5, 1.75, 2.0])
    assert strip_times(0.0, 0.3, 2) == [0.0, 0.3]


def test_a_row_is_n_frames_wide_with_a_caption_band_under_each(qapp):
    frames = [_flat(40, 30, (10 * k, 100, 200)) for k in range(5)]
    image = row_image(frames, [[f"t = {k} s"] for k in range(5)])
    assert image.width() == 5 * 40 and image.height() > 30
    rgb = rgb_array(image)
    for k in range(5):                                   # each panel holds its own frame (bar the separator)
        assert np.all(rgb[5:25, 40 * k + 2:40 * k + 38] == (10 * k, 100, 200))
    band = rgb[31:, :]
    assert len(np.unique(band.reshape(-1, 3), axis=0)) > 2, "no text under the frames"
    with pytest.raises(ValueError):
        row_image(frames, [["one label"]])


def test_an_overlay_shows_every_pose_later_ones_stronger_and_leaves_the_background(qapp):
    bg = (38, 41, 46)
    frames = []
    for k in range(3):                                   # a white square moving right, one per frame
        image = _flat(90, 30, bg)
        image_rgb = rgb_array(image)
        image_rgb[10:20, 10 + 30 * k:20 + 30 * k] = 255
        frames.append(QImage(np.ascontiguousarray(image_rgb).data, 90, 30, 270, QImage.Format.Format_RGB888).copy())
    out = rgb_array(overlay_image(_flat(90, 30, bg), frames, ["caption"]))
    assert out.shape[1] == 90 and out.shape[0] > 30
    picture = out[:30].astype(int)
    first, middle, last = (picture[15, 15 + 30 * k, 0] for k in range(3))
    assert last == 255 and bg[0] < first < middle < last, (first, middle, last)
    assert first == pytest.approx(bg[0] + FAINTEST * (255 - bg[0]), abs=2)
    assert np.all(picture[2, :] == bg) and np.all(picture[25, :] == bg)   # nothing where no pose is


def test_the_motions_framing_holds_every_pose_and_not_the_world_origin():
    model = core.load_scene(HOPPER)
    sim = core.Simulation(model)
    poses = []
    sim.run(3.0)                                         # hopping along x, well away from the origin
    for _ in range(3):
        sim.run(0.5)
        poses.append(core.drawing.draw_list(sim).shape_poses)
    f = frame_motion(model, poses, aspect=1.5, floor_z=0.0)
    centres = np.concatenate([P[:, :3, 3] for P in poses])
    assert np.all(centres >= np.array(f.lo) - 1e-9) and np.all(centres <= np.array(f.hi) + 1e-9)
    assert f.lo[2] <= 0.0 and f.floor_z == 0.0
    assert f.lo[0] > 0.5, "the framing reaches back to the world origin"
    scene = frame_scene(model, aspect=1.5)
    assert (f.azimuth, f.elevation) == (scene.azimuth, scene.elevation)
    one = frame_motion(model, poses[:1], aspect=1.5, floor_z=0.0)
    assert f.distance > one.distance                     # three poses spread along x need a wider view


# ---- arguments (refused before anything is drawn) ---------------------------------------------------------------
@pytest.mark.parametrize("args,names", [
    (["--from", "2", "--to", "1"], ["--to", "1"]),
    (["--from", "1", "--to", "1"], ["--to", "1"]),
    (["--from", "-1", "--to", "1"], ["--from", "-1"]),
    (["--from", "1", "--to", "99"], ["--to", "99", "12"]),
    (["--from", "1", "--to", "2", "--frames", "1"], ["--frames", "1"]),
    (["--from", "1", "--to", "2", "--frames", "65"], ["--frames", "65"]),
    (["--from", "1", "--to", "2", "--size", "8x8"], ["--size", "8x8"]),
    (["--from", "1", "--to", "nan"], ["--to", "nan"]),
], ids=["to-before-from", "to-equals-from", "negative-from", "beyond-duration", "one-frame", "too-many-frames",
        "tiny-size", "nan"])
def test_bad_arguments_are_named_in_one_line_exit_2_and_nothing_is_written(tmp_path, capsys, args, names):
    out = tmp_path / "strip.png"
    code = headless.main(["strip", str(HOPPER), "--out", str(out), *args])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert all(name in err for name in names), err
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_an_out_that_is_a_folder_or_not_writable_is_refused(tmp_path, capsys):
    folder = tmp_path / "a_folder.png"
    folder.mkdir()
    assert headless.main(["strip", str(HOPPER), "--from", "1", "--to", "2", "--out", str(folder)]) == 2
    assert "--out" in capsys.readouterr().err and folder.is_dir()
    assert headless.main(["strip", str(HOPPER), "--from", "1", "--to", "2", "--out", str(tmp_path / "s.jpg")]) == 2
    assert ".png" in capsys.readouterr().err
    a_file = tmp_path / "a_file"
    a_file.write_text("not a folder")
    assert headless.main(["strip", str(HOPPER), "--from", "1", "--to", "2", "--out", str(a_file / "s.png")]) == 2
    err = capsys.readouterr().err
    assert "--out" in err and "not a folder" in err


def test_an_out_in_a_read_only_folder_is_refused(tmp_path, capsys, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):                   # root writes anywhere: let the check see the mode bits
            real = os.access
            monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if Path(p) == locked and mode & os.W_OK
                                else real(p, mode, **kw))
        assert headless.main(["strip", str(HOPPER), "--from", "1", "--to", "2",
                              "--out", str(locked / "s.png")]) == 2
        err = capsys.readouterr().err
        assert "--out" in err and "cannot write" in err
    finally:
        locked.chmod(0o700)


def test_the_command_line_refuses_without_a_traceback(tmp_path):
    out = tmp_path / "s.png"
    result = subprocess.run([sys.executable, "-m", "studio", "strip", str(HOPPER), "--from", "3", "--to", "2",
                             "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2
    assert result.stderr.strip() == "limbstudio: strip: --to must be after --from (3 s), got 2"
    assert not out.exists()
    helped = subprocess.run([sys.executable, "-m", "studio", "strip", "--help"], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert helped.returncode == 0 and "--layout" in helped.stdout and "--frames" in helped.stdout


def test_a_failed_write_leaves_no_file_and_the_old_one_whole(tmp_path, qapp, monkeypatch):
    """The PNG goes through core.fileio's atomic write: a disk that fails after the bytes are written (fsync
    raising ENOSPC) leaves the old file whole and no temporary file beside it; an image that cannot be encoded
    touches nothing."""
    import errno

    import core.fileio
    out = tmp_path / "strip.png"
    out.write_bytes(b"the old picture")

    def full_disk(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(core.fileio.os, "fsync", full_disk)
        with pytest.raises(OSError):
            headless._save_image(_flat(32, 32, (1, 2, 3)), out)
    assert out.read_bytes() == b"the old picture"
    assert [p.name for p in tmp_path.iterdir()] == ["strip.png"], "a temporary file was left behind"
    monkeypatch.setattr(QImage, "save", lambda self, *args: False)
    with pytest.raises(OSError, match="could not encode"):
        headless._save_image(_flat(32, 32, (1, 2, 3)), out)
    assert out.read_bytes() == b"the old picture"
    assert [p.name for p in tmp_path.iterdir()] == ["strip.png"]


# ---- pictures (OpenGL) ------------------------------------------------------------------------------------------
@pytest.mark.gui
def test_a_row_has_one_panel_per_frame_and_the_body_moves_between_them(tmp_path, gl_renderer, capsys):
    out = tmp_path / "row.png"
    code = headless.main(["strip", str(HOPPER), "--from", "2.0", "--to", "2.6", "--frames", "4", "--size",
                          "160x240", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    image = QImage(str(out))
    assert image.width() == 4 * 160 and image.height() > 240
    rgb = rgb_array(image).astype(int)
    panels = [rgb[:240, 160 * k + 1:160 * (k + 1)] for k in range(4)]
    for k in range(4):
        assert len(np.unique(panels[k].reshape(-1, 3), axis=0)) > 20, f"panel {k} is blank"
    for k in range(3):
        moved = np.count_nonzero(np.max(np.abs(panels[k + 1] - panels[k]), axis=2) > 30)
        assert moved > 100, f"panels {k} and {k + 1} are the same picture"
    assert [p.name for p in tmp_path.iterdir()] == ["row.png"]


@pytest.mark.gui
def test_an_overlay_is_one_frame_holding_the_earlier_poses(tmp_path, gl_renderer, capsys):
    args = ["strip", str(HOPPER), "--from", "2.0", "--to", "2.6", "--frames", "4", "--size", "240x200"]
    assert headless.main(args + ["--layout", "overlay", "--out", str(tmp_path / "o.png")]) == 0, \
        capsys.readouterr().err
    assert headless.main(args + ["--layout", "row", "--out", str(tmp_path / "r.png")]) == 0, \
        capsys.readouterr().err
    overlay, row = (rgb_array(QImage(str(tmp_path / n))).astype(int) for n in ("o.png", "r.png"))
    assert overlay.shape[1] == 240 and overlay.shape[0] > 200
    last = row[:200, 3 * 240:4 * 240]                    # the same camera: the last pose, drawn at full strength
    ghosts = np.max(np.abs(overlay[:200, 2:] - last[:, 2:]), axis=2) > 20        # (the row's separator at x = 0)
    # the three earlier poses: about 5700 pixels; four times the same pose: 150 (antialiased lines drawn anew)
    assert np.count_nonzero(ghosts) > 1000, "the overlay shows only the last pose"
    assert np.count_nonzero(~ghosts) > 0.5 * ghosts.size          # the same camera: the background agrees
