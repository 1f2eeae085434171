"""The 3D viewport: an OpenGL view of the model's shapes and overlays, picking and dragging. Thread: GUI
(meshes are built on any thread)."""
