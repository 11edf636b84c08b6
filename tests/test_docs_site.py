"""The documentation site's sources agree with the docs folder and the public API.

``mkdocs build --strict`` itself runs in CI (.ci/run, docs block): broken links and anchors fail
there. These checks need no MkDocs: every page is in the navigation and in ``llms.txt``, and every
public name has a docstring and an entry in docs/api.md.
"""

from __future__ import annotations

import re
from pathlib import Path

import torchscan
import torchscan.modules

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = {page.name for page in DOCS.glob("*.md")}


def test_every_page_is_in_the_navigation() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = set(re.findall(r":\s+([\w-]+\.md)\s*$", config, re.MULTILINE))
    assert nav == PAGES, f"mkdocs.yml nav differs from docs/: {sorted(nav ^ PAGES)}"


def test_llms_txt_lists_every_page_once() -> None:
    text = (DOCS / "llms.txt").read_text(encoding="utf-8")
    assert text.startswith("# TorchScan\n\n> "), "llms.txt opens with a title and a summary line"
    links = re.findall(r"^- \[[^\]]+\]\(([\w-]+\.md)\): \S", text, re.MULTILINE)
    assert sorted(links) == sorted(PAGES), f"llms.txt differs from docs/: {sorted(set(links) ^ PAGES)}"


def test_every_public_name_is_documented_in_the_api_reference() -> None:
    api = (DOCS / "api.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^::: ([\w.]+)$", api, re.MULTILINE))
    public = [getattr(torchscan, name) for name in torchscan.__all__ if name != "__version__"]
    public += [getattr(torchscan.modules, name) for name in torchscan.modules.__all__]
    for item in public:
        assert f"{item.__module__}.{item.__name__}" in documented, f"{item.__name__} is not in docs/api.md"
        assert (item.__doc__ or "").strip(), f"{item.__name__} has no docstring"
    assert len(documented) == len({id(item) for item in public}), "docs/api.md names something not public"


def test_changelog_has_an_unreleased_section_and_the_current_version() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "## Unreleased" in text and f"## {torchscan.__version__}" in text
    assert text.index("## Unreleased") < text.index(f"## {torchscan.__version__}")
