"""The open scene document with its undo stack (:mod:`.document`) and the selection shared by the tree,
inspector and viewport (:mod:`.selection`). Thread: GUI."""
