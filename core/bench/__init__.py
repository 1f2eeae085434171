"""The adaptive-control bench of thesis §3.4: one trial (:mod:`~core.bench.trial`: an arm, a trajectory, a
controller, scored by the L2 tracking error of eq. 3.44), the grid of trials run in parallel
(:mod:`~core.bench.sweep`, ``python -m core sweep``) and the thesis's figures drawn from it
(:mod:`~core.bench.figures`). It sits on top of :class:`core.Simulation`: a trial runs exactly what the studio
runs."""
