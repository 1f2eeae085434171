"""The limits every scene document is held to before its schema is checked, and the reading of its bytes.

A document is refused, with the JSON path and the value of each problem, when it breaks one of these limits
(stated here once; ``core/scene/schema.py`` and the README refer to them):

=========================  ======================================================================================
``MAX_DOCUMENT_BYTES``     16 MiB of file
encoding                   UTF-8 (an initial byte-order mark is skipped); UTF-16/32 text and binary data are
                           refused with the offset of the first byte that is not UTF-8
``MAX_DEPTH``              32 levels of nested arrays and objects
``MAX_ITEMS``              100 000 items in one array or object
``MAX_BODIES``             10 000 bodies; also at most 10 000 constraints, forces and controllers each
``MAX_KEY_LENGTH``         128 characters in a field name
``MAX_INTEGER_DIGITS``     20 digits in an integer literal
numbers                    finite (no NaN, Infinity or a literal that overflows), and 0 or of magnitude between
                           ``MIN_MAGNITUDE`` = 1e-30 and ``MAX_MAGNITUDE`` = 1e12, so that the products, squares
                           and quotients the compiler and the step form from a handful of them stay finite and
                           normal
``MAX_EXPRESSION_DEPTH``   64 nested operations in a joint-space expression (and 2000 characters)
``MAX_PROBLEMS``           problems reported in full; the rest are counted ("and N more problem(s)")
``MIN_DT``                 1e-9 s, the shortest time step (``simulation.dt``, ``--dt``): a shorter one cannot
                           move the clock (steps shorter than 1e-12 of the time are not taken) and no run of it
                           would end
=========================  ======================================================================================

:func:`decode_document` turns the bytes of a file into a JSON value or problems; :func:`check_values` walks a
decoded document once (iteratively, linear in its size) and returns its problems with a copy in which every
offending value is replaced by ``None`` (so the schema, which sees the copy, never computes with it and its own
complaint about the same path is dropped).
"""
from __future__ import annotations

import ast
import json
import math
import re
from typing import Any

__all__ = ["MAX_DOCUMENT_BYTES", "MAX_DEPTH", "MAX_ITEMS", "MAX_BODIES", "MAX_ENTITIES", "MAX_KEY_LENGTH",
           "MAX_INTEGER_DIGITS", "MAX_MAGNITUDE", "MIN_MAGNITUDE", "MAX_EXPRESSION_DEPTH", "MAX_PROBLEMS", "MIN_DT",
           "decode_document", "check_values", "expression_depth", "preview", "name_list"]

MAX_DOCUMENT_BYTES = 16 * 2 ** 20
MAX_DEPTH = 32
MAX_ITEMS = 100_000
MAX_BODIES = 10_000
MAX_ENTITIES = 10_000
MAX_KEY_LENGTH = 128
MAX_INTEGER_DIGITS = 20
MAX_MAGNITUDE = 1e12
MIN_MAGNITUDE = 1e-30
MAX_EXPRESSION_DEPTH = 64
MAX_PROBLEMS = 100
MIN_DT = 1e-9
#: Contact points in a scene (each is up to three constraint rows; a box gives its 8 corners): the event tables
#: and the solve's scratch grow with their square — 3200 took 4.6 GB; 768 take ~0.42 GB over the process's
#: ~0.12 GB (512: ~0.29 GB, 1024: ~0.6 GB). 512 refused Menagerie's ANYmal C (515 ground points, its legs'
#: cylinders 16 each), which runs at 768.
MAX_CONTACT_POINTS = 768

_SECTION_LIMITS = {"bodies": MAX_BODIES, "constraints": MAX_ENTITIES, "forces": MAX_ENTITIES,
                   "controllers": MAX_ENTITIES}
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")


class _Literal:
    """A JSON number the decoder did not convert (too many digits, NaN or Infinity): its text."""
    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text if len(self.text) <= 24 else f"{self.text[:12]}…{self.text[-4:]} ({len(self.text)} characters)"


def _parse_int(text: str):
    return int(text) if len(text.lstrip("-")) <= MAX_INTEGER_DIGITS else _Literal(text)


def _parse_constant(text: str):
    return _Literal(text)


def _line_column(data: bytes, offset: int) -> tuple[int, int]:
    line = data.count(b"\n", 0, offset) + 1
    return line, offset - (data.rfind(b"\n", 0, offset) + 1) + 1


def decode_document(data: bytes) -> tuple[Any, list[tuple[str, str]]]:
    """``(value, [])`` for the bytes of a JSON document in UTF-8, else ``(None, [(path, message)])`` saying why
    not: too large, empty, UTF-16/32 or binary, not UTF-8 (the first bad byte, its line and column), not JSON
    (line and column), nested deeper than the parser can follow. Never raises."""
    if len(data) > MAX_DOCUMENT_BYTES:
        return None, [("$", f"the file is {len(data)} bytes; a scene document may have at most "
                       f"{MAX_DOCUMENT_BYTES} bytes ({MAX_DOCUMENT_BYTES // 2 ** 20} MiB)")]
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data.strip():
        return None, [("$", "the file is empty; a scene document is a JSON object")]
    for bom, name in ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe", "UTF-16"),
                      (b"\xfe\xff", "UTF-16")):
        if data.startswith(bom):
            return None, [("$", f"the file is {name} text; scene documents are UTF-8: save it as UTF-8")]
    nul = data.find(b"\x00")
    if nul >= 0:
        line, col = _line_column(data, nul)
        guess = "UTF-16 or UTF-32 text" if nul < 4 and len(data) > 1 else "binary data"
        return None, [("$", f"the file holds a NUL byte at offset {nul} (line {line}, column {col}): it looks like "
                       f"{guess}, not a UTF-8 JSON document")]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = _line_column(data, exc.start)
        return None, [("$", f"the file is not UTF-8 text: byte 0x{data[exc.start]:02X} at offset {exc.start} "
                       f"(line {line}, column {col}) cannot be decoded ({exc.reason}); save it as UTF-8")]
    try:
        return json.loads(text, parse_int=_parse_int, parse_constant=_parse_constant), []
    except json.JSONDecodeError as exc:
        return None, [("$", f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}")]
    except RecursionError:
        return None, [("$", f"arrays and objects are nested far deeper than the {MAX_DEPTH} levels a scene "
                       "document may have")]
    except (ValueError, MemoryError) as exc:              # (defensive: json raises JSONDecodeError for bad text)
        return None, [("$", f"cannot be read as JSON: {type(exc).__name__}: {str(exc)[:200]}")]


def _key_path(path: str, key) -> str:
    if isinstance(key, str) and _IDENTIFIER.match(key):
        return f"{path}.{key}"
    text = key if isinstance(key, str) else str(key)
    shown = text if len(text) <= 40 else text[:37] + "..."
    return f"{path}[{json.dumps(shown)}]"


def _number_problem(value) -> str | None:
    if isinstance(value, _Literal):
        if value.text in ("NaN", "Infinity", "-Infinity"):
            return f"{value.text} is not a JSON number; numbers must be finite"
        return (f"an integer literal of {len(value.text.lstrip('-'))} digits; at most {MAX_INTEGER_DIGITS} digits "
                f"(and a magnitude of at most {MAX_MAGNITUDE:g})")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        x = abs(float(value))
    except OverflowError:
        x = math.inf
    if not math.isfinite(x):
        return "numbers must be finite (this literal overflows a double)"
    if x > MAX_MAGNITUDE:
        return f"numbers must have a magnitude of at most {MAX_MAGNITUDE:g}"
    if 0.0 < x < MIN_MAGNITUDE:
        return f"numbers must be 0 or of magnitude at least {MIN_MAGNITUDE:g}"
    return None


def check_values(raw: Any) -> tuple[list[tuple[str, str, Any, bool]], Any]:
    """Hold every value of a decoded document to the limits of the module docstring, in one iterative walk.

    Returns ``(problems, cleaned)``: each problem is ``(path, message, value, has_value)``; ``cleaned`` is ``raw``
    itself when there is nothing to replace, else a copy in which each offending value is ``None`` (and each
    over-long field name is dropped). Never raises; never recurses."""
    problems: list[tuple[str, str, Any, bool]] = []
    replace: list[tuple[tuple, bool]] = []                # (path of keys, drop the key instead)
    stack: list[tuple[Any, str, tuple, int]] = [(raw, "$", (), 0)]
    while stack:
        value, path, keys, depth = stack.pop()
        if isinstance(value, dict):
            items = list(value.items())
        elif isinstance(value, list):
            items = list(enumerate(value))
        else:
            why = _number_problem(value)
            if why is not None:
                shown = not isinstance(value, _Literal)
                problems.append((path, why if shown else f"{why} (got {value!r})", value if shown else None, shown))
                replace.append((keys, False))
            continue
        if depth >= MAX_DEPTH:
            problems.append((path, f"nested deeper than the {MAX_DEPTH} levels of arrays and objects a scene "
                             "document may have", None, False))
            replace.append((keys, False))
            continue
        limit = _SECTION_LIMITS.get(keys[0], MAX_ITEMS) if len(keys) == 1 and isinstance(value, list) else MAX_ITEMS
        if len(items) > limit:
            what = f"{keys[0]}" if limit != MAX_ITEMS else "items in one array or object"
            problems.append((path, f"has {len(items)} {what}; at most {limit}", None, False))
            replace.append((keys, False))
            continue
        for key, child in reversed(items):
            if isinstance(key, str) and len(key) > MAX_KEY_LENGTH:
                problems.append((_key_path(path, key), f"a field name of {len(key)} characters; at most "
                                 f"{MAX_KEY_LENGTH}", None, False))
                replace.append((keys + (key,), True))
                continue
            child_path = f"{path}[{key}]" if isinstance(key, int) else _key_path(path, key)
            stack.append((child, child_path, keys + (key,), depth + 1))
    if not replace:
        return problems, raw
    return problems, _replaced(raw, replace)


def _replaced(raw: Any, replace: list[tuple[tuple, bool]]) -> Any:
    """A copy of ``raw`` sharing what is untouched, with the values at the given key paths set to None (or their
    keys dropped). Copies only the containers along those paths."""
    if any(not keys for keys, _ in replace):
        return None
    root = _shallow(raw)
    copied = {(): root}
    for keys, drop in replace:
        node = root
        for n in range(len(keys) - 1):
            prefix = keys[:n + 1]
            if prefix not in copied:
                node[keys[n]] = copied[prefix] = _shallow(node[keys[n]])
            node = copied[prefix]
        if drop:
            node.pop(keys[-1], None)
        else:
            node[keys[-1]] = None
    return root


def _shallow(value):
    return dict(value) if isinstance(value, dict) else list(value)


def expression_depth(text: str) -> int | None:
    """The nesting depth of the syntax tree of ``text`` (iterative), or None if it does not parse (the
    expression checker reports why) or is too deep for Python's own parser (reported as MAX_EXPRESSION_DEPTH + 1
    and more)."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        return None
    except (RecursionError, MemoryError, ValueError):
        return MAX_EXPRESSION_DEPTH + 1
    deepest, stack = 0, [(tree.body, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_EXPRESSION_DEPTH:
            break
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node)
                     if not isinstance(child, (ast.operator, ast.unaryop, ast.expr_context)))
    return deepest


def preview(value: Any, limit: int = 80) -> str:
    """``value`` as JSON text (repr for what JSON cannot hold), cut to ``limit`` characters with "..." — built
    iteratively and stopped as soon as it is long enough, so a huge or deeply nested value costs no more than a
    small one."""
    out: list[str] = []
    size = 0
    stack: list = [value]
    while stack and size <= limit:
        item = stack.pop()
        if isinstance(item, _Token):
            piece = item.text
        elif isinstance(item, dict):
            entries = list(item.items())[:limit]
            stack.append(_Token("}"))
            for n, (k, v) in enumerate(reversed(entries)):
                stack.append(v)
                stack.append(_Token(json.dumps(str(k)[:limit]) + ": "))
                if n < len(entries) - 1:
                    stack.append(_Token(", "))
            piece = "{"
        elif isinstance(item, (list, tuple)):
            entries = list(item[:limit])
            stack.append(_Token("]"))
            for n, v in enumerate(reversed(entries)):
                stack.append(v)
                if n < len(entries) - 1:
                    stack.append(_Token(", "))
            piece = "["
        elif isinstance(item, str):
            piece = json.dumps(item[:limit + 1])
        elif item is None or isinstance(item, bool) or isinstance(item, (int, float)) and _finite(item):
            piece = json.dumps(item) if not isinstance(item, int) or abs(item) < 10 ** 30 else repr(_Literal(str(item)))
        else:
            piece = repr(item)[:limit + 1]
        out.append(piece)
        size += len(piece)
    text = "".join(out)
    return text if len(text) <= limit and not stack else text[:limit - 3] + "..."


def _finite(x) -> bool:
    try:
        return math.isfinite(x)
    except OverflowError:
        return False


class _Token:
    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


def name_list(names, limit: int = 20) -> str:
    """Sorted names joined with ", " — at most ``limit`` of them, then "… (N in all)"; "none" for none."""
    names = sorted(n for n in names if isinstance(n, str))
    if not names:
        return "none"
    if len(names) <= limit:
        return ", ".join(names)
    return ", ".join(names[:limit]) + f", … ({len(names)} in all)"
