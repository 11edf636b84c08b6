"""Parse rendered HTML with ``html.parser`` into a small element tree tests can query."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from html.parser import HTMLParser

from torchscan.views.common.embed import decode

VOID = {"meta", "input", "br", "link", "img", "hr", "col", "area", "base", "embed", "source", "wbr", "track"}
SVG_SELF_CLOSING = {"rect", "line", "path", "circle", "stop"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str | None]
    parent: Element | None = None
    children: list[Element] = field(default_factory=list)
    parts: list[str | Element] = field(default_factory=list)

    def text(self) -> str:
        return "".join(p if isinstance(p, str) else p.text() for p in self.parts)

    def iter(self):
        yield self
        for child in self.children:
            yield from child.iter()

    def find_all(self, tag: str | None = None, **attrs: str) -> list[Element]:
        out = []
        for element in self.iter():
            if tag is not None and element.tag != tag:
                continue
            if all(element.attrs.get(k.rstrip("_").replace("_", "-")) == v for k, v in attrs.items()):
                out.append(element)
        return out

    def by_id(self, ident: str) -> Element | None:
        for element in self.iter():
            if element.attrs.get("id") == ident:
                return element
        return None

    def has_class(self, name: str) -> bool:
        return name in (self.attrs.get("class") or "").split()


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.current = self.root
        self.script_texts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, dict(attrs), self.current)
        self.current.children.append(element)
        self.current.parts.append(element)
        if tag not in VOID:
            self.current = element

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, dict(attrs), self.current)
        self.current.children.append(element)
        self.current.parts.append(element)

    def handle_endtag(self, tag: str) -> None:
        node: Element | None = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        if node is None:
            raise AssertionError(f"unmatched </{tag}>")
        if node is not self.current:
            raise AssertionError(f"</{tag}> closes {self.current.tag} early")
        assert node.parent is not None
        self.current = node.parent

    def handle_data(self, data: str) -> None:
        self.current.parts.append(data)


def parse_html(document: str) -> Element:
    """Parse a document, asserting that every element is properly closed."""
    builder = _Builder()
    builder.feed(document)
    builder.close()
    assert builder.current is builder.root, f"unclosed <{builder.current.tag}>"
    return builder.root


def embedded_data(document: str) -> dict:
    """The explorer's embedded JSON data object."""
    root = parse_html(document)
    script = root.by_id("torchscan-data")
    assert script is not None
    return decode(json.loads(script.text()))
