"""Scene documents: schema, validation with JSON paths, atomic save, compilation to a frozen Model."""
from . import robots  # noqa: F401  (registers the robot reader the documents' includes use)
from .compile import compile_scene
from .io import Problem, SceneError, parse_spec, read_spec, save_spec, spec_to_json
from .schema import FORMAT_VERSION, Scene

__all__ = ["FORMAT_VERSION", "Problem", "Scene", "SceneError", "compile_scene", "parse_spec", "read_spec",
           "save_spec", "spec_to_json"]
