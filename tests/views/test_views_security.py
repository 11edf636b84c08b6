"""Hostile content, CSP, embedded JSON, SVG safety and the no-torch rule (render.md 3.8, 3.9, 4, 7.8)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

from view_parse import parse_html
from view_reports import BIDI, P, benchmark_report, hostile_report

from torchscan.views.common.embed import decode
from torchscan.views.render import render_report

NS = "{http://www.w3.org/2000/svg}"


def test_hostile_html_never_breaks_out() -> None:
    report = hostile_report()
    before = hostile_report()
    html = render_report(report, before=before, title=P)
    root = parse_html(html)
    scripts = root.find_all("script")
    assert len(scripts) == 2 and all("src" not in s.attrs for s in scripts)
    assert not root.find_all("img") and not root.find_all("iframe") and not root.find_all("object")
    for element in root.iter():
        assert not any(name.lower().startswith("on") for name in element.attrs), element.attrs
    data_text = root.by_id("torchscan-data").text()  # type: ignore[union-attr]
    for forbidden in ("<", "&", "\u2028", "\u2029"):
        assert forbidden not in data_text
    data = decode(json.loads(data_text))  # the compact embedding round-trips exactly (issue 15)
    assert data["report"] == report and data["before"] == before
    assert root.find_all("title")[0].text() == P
    assert root.find_all("h1")[0].text() == P
    executable = scripts[1].text()
    digest = base64.b64encode(hashlib.sha256(executable.encode()).digest()).decode()
    csp = next(m.attrs["content"] for m in root.find_all("meta") if m.attrs.get("http-equiv"))
    assert csp == (
        f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{digest}'; base-uri 'none'; "
        "form-action 'none'"
    )
    index = next(d["index"] for d in data["before_diagnostics"] if d["code"] == P)
    item = root.by_id(f"before-diagnostic-{index}")
    assert item is not None and P in item.text()
    # Bidi controls are shown as visible markers in text, never raw.
    visible = root.text().replace(data_text, "")
    assert "\u202e" not in visible and "<U+202E>" in visible
    assert P in visible  # the hostile text appears, as text
    assert "pwned" not in executable


def test_hostile_text_is_escaped_in_attributes() -> None:
    html = render_report(hostile_report(), title=P)
    for match in re.finditer(r'"([^"]*)"', html.split('<script id="torchscan-data"')[0]):
        assert "<" not in match.group(1) and ">" not in match.group(1)
    assert "<img" not in html.replace("&lt;img", "")


def test_hostile_svg_parses_and_is_inert() -> None:
    for before in (None, hostile_report()):
        svg_text = render_report(hostile_report(), before=before, title=P, format="svg")
        assert svg_text.endswith("</svg>\n")
        root = ET.fromstring(svg_text)
        assert root.tag == f"{NS}svg" and root.get("role") == "img"
        assert root.get("aria-labelledby") == "svg-title svg-description"
        title = root.find(f"{NS}title")
        assert title is not None and title.text == P and title.get("id") == "svg-title"
        for forbidden in ("script", "image", "foreignObject", "img", "iframe"):
            assert not list(root.iter(f"{NS}{forbidden}")) and not list(root.iter(forbidden))
        ids = [e.get("id") for e in root.iter() if e.get("id")]
        assert len(ids) == len(set(ids))
        for element in root.iter():
            assert not any(k.lower().startswith("on") for k in element.attrib)
            href = element.get("href")
            if element.tag == f"{NS}a":
                assert element.get("tabindex") == "0"
                assert href is not None and href.startswith("#") and href[1:] in ids
        assert "\u202e" not in svg_text


def test_svg_tooltips_repeat_only_what_is_drawn() -> None:
    # views-3.md 5 amends render.md 4: no call-evidence JSON in tooltips (it was 84 % of a snapshot).
    report = hostile_report()
    text = render_report(report, format="svg")
    root = ET.fromstring(text)
    for tile in root.iter(f"{NS}a"):
        if tile.get("id", "").startswith("static-map-"):
            title = tile.find(f"{NS}title")
            assert title is not None and title.text == tile.get("aria-label")  # the drawn description
    assert '"layers"' not in text and '"call_index"' not in text and "Call evidence" not in text
    block = next(g for g in root.iter(f"{NS}g") if g.get("id") == "svg-evidence")
    assert block.find(f"{NS}title") is None
    lines = [t.text or "" for t in block.iter(f"{NS}text")]
    assert lines[0] == "Inputs and context" and any(line.startswith("model_type: ") for line in lines)


def test_benchmark_title_escaped() -> None:
    html = render_report(benchmark_report(), title="<script>alert(1)</script>")
    root = parse_html(html)
    assert not root.find_all("script")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert root.find_all("title")[0].text() == "<script>alert(1)</script>"


def test_bidi_in_title_is_neutralised() -> None:
    html = render_report(hostile_report(), title="a" + BIDI)
    assert "\u202e" not in html.split('<script id="torchscan-data"')[0]


def test_views_do_not_import_torch() -> None:
    code = (
        "import sys, json\n"
        "import torchscan.views.render, torchscan.report.validate\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from view_reports import tiny_report\n"
        "r = tiny_report()\n"
        "torchscan.views.render.render_report(r, before=r)\n"
        "torchscan.views.render.render_report(r, format='svg')\n"
        "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if m.startswith('torch.'))[:5]\n"
    )
    import pathlib

    here = str(pathlib.Path(__file__).parent)
    subprocess.run([sys.executable, "-c", code, here], check=True)
