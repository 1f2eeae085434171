"""Saving a scene document in its own form: a saved edit changes only the text of what changed.

:func:`rewrite` takes a document's text and the new data and returns the text with only the changed values
rewritten: key order, whitespace, explicit fields (even at their defaults), the spelling of numbers that kept
their value (``1e-3``, ``0`` for a float, ``20.0``), string escapes and non-ASCII text are kept. A number that
changed keeps the original's kind (an integer-looking token stays an integer while the value is integral). New
members go after the last one, in the container's style (one per line, or inline); members no longer present go.
Lists of named objects (bodies, constraints, forces …) are matched by ``name``, so an added or deleted item leaves
the other items' text alone.

:func:`document_text` is the text of a scene spec given the file it was read from (or ``core``'s own form when
there is none); :func:`save_document` writes it atomically, giving a new file the original's mode.

Thread: any (pure functions and file writes).
"""
from __future__ import annotations

import json
import os
import re
from json.decoder import scanstring
from pathlib import Path

from core.fileio import atomic_write_bytes

__all__ = ["rewrite", "document_text", "save_document"]

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_WS = re.compile(r"[ \t\n\r]*")
_MISSING = object()


class _Node:
    """A parsed JSON value with its span in the text: ``kind`` 'obj', 'arr' or 'atom'; ``members`` for 'obj'
    ((key, key_start, node), …); ``items`` for 'arr'."""
    __slots__ = ("kind", "start", "end", "members", "items", "value")

    def __init__(self, kind, start):
        self.kind, self.start, self.end = kind, start, start
        self.members, self.items, self.value = [], [], None


def _ws(text: str, i: int) -> int:
    return _WS.match(text, i).end()


def _parse(text: str, i: int) -> _Node:
    i = _ws(text, i)
    c = text[i]
    if c == "{":
        node = _Node("obj", i)
        i = _ws(text, i + 1)
        if text[i] == "}":
            node.end = i + 1
            return node
        while True:
            key_start = i
            key, i = scanstring(text, i + 1)
            i = _ws(text, i)
            assert text[i] == ":"
            value = _parse(text, i + 1)
            node.members.append((key, key_start, value))
            i = _ws(text, value.end)
            if text[i] == ",":
                i = _ws(text, i + 1)
                continue
            assert text[i] == "}"
            node.end = i + 1
            return node
    if c == "[":
        node = _Node("arr", i)
        i = _ws(text, i + 1)
        if text[i] == "]":
            node.end = i + 1
            return node
        while True:
            value = _parse(text, i)
            node.items.append(value)
            i = _ws(text, value.end)
            if text[i] == ",":
                i = _ws(text, i + 1)
                continue
            assert text[i] == "]"
            node.end = i + 1
            return node
    node = _Node("atom", i)
    if c == '"':
        node.value, node.end = scanstring(text, i + 1)
        return node
    for word, value in (("true", True), ("false", False), ("null", None)):
        if text.startswith(word, i):
            node.value, node.end = value, i + len(word)
            return node
    m = _NUMBER.match(text, i)
    if not m:
        raise ValueError(f"not JSON at character {i}")
    node.value, node.end = json.loads(m.group()), m.end()
    return node


class _Writer:
    def __init__(self, text: str):
        self.text = text
        m = re.search(r"\n([ \t]+)\S", text)
        self.unit = m.group(1) if m else "  "

    # ---- new text, in the document's style ---------------------------------------------------------------
    def render(self, value, depth: int, inline: bool) -> str:
        if inline:
            return json.dumps(value, ensure_ascii=False)
        out = json.dumps(value, indent=len(self.unit) if self.unit.strip(" ") == "" else self.unit,
                         ensure_ascii=False)
        return out.replace("\n", "\n" + self.unit * depth)

    def atom(self, node: _Node, value) -> str:
        token = self.text[node.start:node.end]
        old = node.value
        if type(old) is type(value) and old == value:                  # same value: same spelling
            return token
        if isinstance(old, (int, float)) and isinstance(value, (int, float)) and not isinstance(old, bool) \
                and not isinstance(value, bool):
            if old == value and not isinstance(value, bool):
                return token
            if isinstance(value, float) and value.is_integer() and isinstance(old, int) and abs(value) < 2 ** 53:
                return str(int(value))                                   # an integer stays one
        return json.dumps(value, ensure_ascii=False)

    # ---- rewriting -----------------------------------------------------------------------------------------
    def value(self, node: _Node, new, full, old, depth: int) -> str:
        if node.kind == "obj" and isinstance(new, dict):
            return self.obj(node, new, full if isinstance(full, dict) else new,
                            old if isinstance(old, dict) else None, depth)
        if node.kind == "arr" and isinstance(new, list):
            return self.arr(node, new, full if isinstance(full, list) else new,
                            old if isinstance(old, list) and len(old) == len(node.items) else None, depth)
        if node.kind == "atom" and not isinstance(new, (dict, list)):
            return self.atom(node, new)
        return self.render(new, depth, self._inline(node))

    def _inline(self, node: _Node) -> bool:
        return "\n" not in self.text[node.start:node.end] and node.kind != "atom"

    def _layout(self, node: _Node, starts: list[int], ends: list[int], depth: int, inline: bool):
        """(leading, separators before each original element, trailing) whitespace of a container."""
        text = self.text
        if not starts:
            if inline:
                return "", [], ""
            return "\n" + self.unit * (depth + 1), [], "\n" + self.unit * depth
        leading = text[node.start + 1:starts[0]]
        seps = [""] + [text[ends[k - 1]:starts[k]] for k in range(1, len(starts))]
        trailing = text[ends[-1]:node.end - 1]
        return leading, seps, trailing

    def _join(self, node, pieces, origin, starts, ends, depth):
        """``pieces``: the new elements' texts; ``origin[k]``: the original index of piece k, or None."""
        inline = "\n" not in self.text[node.start:node.end]
        leading, seps, trailing = self._layout(node, starts, ends, depth, inline)
        if not pieces:
            return self.text[node.start] + self.text[node.end - 1]
        default = next((s for s in seps[1:]), ", " if inline else ",\n" + self.unit * (depth + 1))
        out = [self.text[node.start], leading]
        for k, piece in enumerate(pieces):
            if k:
                j = origin[k]
                out.append(seps[j] if j is not None and j > 0 else default)
            out.append(piece)
        out += [trailing, self.text[node.end - 1]]
        return "".join(out)

    def obj(self, node: _Node, new: dict, full: dict, old_data: dict | None, depth: int) -> str:
        inline = "\n" not in self.text[node.start:node.end]
        old = {key: (j, ks, child) for j, (key, ks, child) in enumerate(node.members)}
        pieces, origin = [], []
        for key, key_start, child in node.members:            # the original's members, in its order
            value = new.get(key, _MISSING)
            if value is _MISSING:
                value = full.get(key, _MISSING)               # an explicit field at its default stays
            if value is _MISSING:
                continue
            head = self.text[key_start:child.start]
            was = _MISSING if old_data is None else old_data.get(key, _MISSING)
            pieces.append(head + self.value(child, value, full.get(key, value), was, depth + 1))
            origin.append(old[key][0])
        for key in list(new) + [k for k in full if k not in new]:     # new members, after the others
            if key in old:
                continue
            if old_data is None:
                if key not in new:
                    continue
            elif old_data.get(key, _MISSING) == full.get(key, _MISSING):
                continue                                      # what the original meant without writing it
            value = new.get(key, full.get(key))
            pieces.append(json.dumps(key, ensure_ascii=False) + ": " + self.render(value, depth + 1, inline))
            origin.append(None)
        starts = [ks for _, ks, _ in node.members]
        ends = [child.end for _, _, child in node.members]
        return self._join(node, pieces, origin, starts, ends, depth)

    def arr(self, node: _Node, new: list, full: list, old_data: list | None, depth: int) -> str:
        inline = "\n" not in self.text[node.start:node.end]
        items = node.items
        by_name = {}
        named = all(isinstance(v, dict) and isinstance(v.get("name"), str) for v in new) and all(
            it.kind == "obj" for it in items)
        if named:
            for j, it in enumerate(items):
                name = next((c.value for k, _, c in it.members if k == "name" and c.kind == "atom"), None)
                if isinstance(name, str) and name not in by_name:
                    by_name[name] = j
        pieces, origin = [], []
        for k, value in enumerate(new):
            fv = full[k] if k < len(full) else value
            if named:
                j = by_name.get(value["name"])
                if j is None and len(new) == len(items):
                    j = k                                     # renamed in place
            else:
                j = k if k < len(items) and len(new) == len(items) else (k if k < len(items) else None)
            if j is None:
                pieces.append(self.render(value, depth + 1, inline))
            else:
                was = _MISSING if old_data is None else old_data[j]
                pieces.append(self.value(items[j], value, fv, was, depth + 1))
            origin.append(j)
        starts = [it.start for it in items]
        ends = [it.end for it in items]
        return self._join(node, pieces, origin, starts, ends, depth)


def rewrite(text: str, data, full=None, old=None) -> str:
    """``text`` (a JSON document) rewritten to hold ``data``, changing only the text of what changed (module
    docstring). ``full``: the same data with every field written out, defaults included; a member of the
    original that ``data`` leaves out (a field at its default) keeps its value from ``full``, and goes only
    when ``full`` has no such field either. ``old``: what ``text`` meant, every field written out (as ``full``);
    a field the text leaves out is then written only when its value differs from that (without ``old``: when
    ``data`` has it)."""
    root = _parse(text, 0)
    writer = _Writer(text)
    body = writer.value(root, data, data if full is None else full, old, 0)
    return text[:root.start] + body + text[root.end:]


def _dumps(spec) -> tuple[dict, dict]:
    minimal = {"format_version": spec.format_version, **spec.model_dump(mode="json", exclude_defaults=True)}
    full = {"format_version": spec.format_version, **spec.model_dump(mode="json")}
    return minimal, full


def document_text(spec, base: str | None = None, folder=None) -> str:
    """The text of scene ``spec``: ``base`` (the text it was read from) with only what changed rewritten, or the
    core's own form (``core.scene.spec_to_json``: defaults left out, two-space indents) in UTF-8 (non-ASCII text
    as itself, not ``\\u2013``) without one (or when ``base`` cannot be rewritten). An included robot file is
    written relative to ``folder`` (the document's folder), :func:`core.scene.io.relocated`."""
    from core.scene.io import relocated
    spec = relocated(spec, folder)

    def spec_to_json(spec) -> str:
        return json.dumps(_dumps(spec)[0], indent=2, ensure_ascii=False) + "\n"

    if base is None:
        return spec_to_json(spec)
    from core.scene import parse_spec
    minimal, full = _dumps(spec)
    try:
        old = _dumps(relocated(parse_spec(json.loads(base), folder=folder), folder))[1]
    except Exception:                 # a text the core cannot read as a scene: no knowledge of its defaults
        old = None
    try:
        return rewrite(base, minimal, full, old)
    except (ValueError, AssertionError, IndexError):
        return spec_to_json(spec)


def save_document(spec, path: str | os.PathLike, base: str | None = None, mode: int | None = None) -> Path:
    """Write ``spec`` to ``path`` atomically (a hidden file beside it, flushed, renamed over it) in the form of
    ``base``. The file keeps its own mode when it exists; a new file gets ``mode`` (the original's, for "save
    as"), else the usual mode for new files (0666 less the umask). A symbolic link is written through: its
    target gets the new text and the link stays (:func:`core.fileio.atomic_write_bytes`)."""
    folder = Path(os.path.abspath(path)).parent
    return atomic_write_bytes(path, document_text(spec, base, folder).encode("utf-8"), mode)
