"""The scene document's data, without Qt: edits of a scene spec as pure functions (:mod:`.edits`), saving
that changes only the text of what changed (:mod:`.jsontext`), the kinds of a model's joints, constraints and
forces by their scene names (:mod:`.kinds`), the fields' units (:mod:`.units`) and the included robot file's scene
(:mod:`.robot`). Any thread.

The document object that holds the spec, its file and its undo stack is Qt's (:mod:`studio.qt.document`)."""
