"""The running simulation seen from Qt: the worker that owns it on its own thread (:mod:`.worker`), the GUI's
handle on it (:mod:`.simthread`), recordings (:mod:`.recording`) and the first run's kernel compile
(:mod:`.kernels`)."""
