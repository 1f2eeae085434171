"""A run of the simulation as the studio keeps it, without Qt: the frozen messages between the GUI and the
worker (:mod:`.messages`), stepping by whole steps (:mod:`.stepping`), the states one can go back to
(:mod:`.timeline`), edits brought into a running simulation (:mod:`.reload`), the plots' columns (:mod:`.samples`)
and bounded history (:mod:`.history`), every step's records for exports (:mod:`.runrecords`) and the events as the
studio names them (:mod:`.events`). Any thread; the worker that drives them is :mod:`studio.qt.run.worker`."""
