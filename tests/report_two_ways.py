"""Print the "two ways" table of thesis §2.4: the planar three-link arm as a tree of three hinges
(scenes/three_link_arm.json) and as three free bodies held by hinge constraints
(scenes/three_link_free_bodies.json), run side by side.

    .venv/bin/python tests/report_two_ways.py [--duration 2] [--dt 0.001]

Columns: velocity coordinates, constraint rows, steps, wall time, cost per step, the largest hinge deviation
(constraint drift), and the largest energy-audit error; then how far apart the two runs' link poses and tips got.
Wall times depend on the machine and its load: compare the ratio, not the numbers.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from test_thesis_arms import two_ways, two_ways_table  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=2.0, help="simulated seconds (default 2)")
    parser.add_argument("--dt", type=float, default=1e-3, help="RK4 time step in s (default 0.001)")
    args = parser.parse_args(argv)
    print(two_ways_table(two_ways(args.duration, args.dt)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
