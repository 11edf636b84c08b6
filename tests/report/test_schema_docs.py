"""docs/report-schema.md agrees with the code: its generated blocks are what the code generates.

The blocks between ``<!-- BEGIN GENERATED: name -->`` and ``<!-- END GENERATED: name -->`` come
from ``torchscan.report.schema_markdown`` (report kinds, wire types, labels, diagnostic codes).
When this test fails, a report type, a label or a code changed: regenerate the page with
``TORCHSCAN_UPDATE_DOCS=1 python -m pytest tests/report/test_schema_docs.py`` and review the diff.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from torchscan.report.codes import CODES
from torchscan.report.json_schema import REPORT_KINDS
from torchscan.report.schema_markdown import BLOCK, SECTIONS, generated_blocks

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "report-schema.md"
DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md", ROOT / "skills" / "torchscan" / "SKILL.md"]


def test_generated_blocks_match_the_code() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert {match[2] for match in BLOCK.finditer(text)} == set(SECTIONS), "a generated block is missing"
    fresh = generated_blocks(text)
    if fresh != text and os.environ.get("TORCHSCAN_UPDATE_DOCS") == "1":
        PAGE.write_text(fresh, encoding="utf-8")
        text = fresh
    assert fresh == text, (
        "docs/report-schema.md differs from the code's report types, labels or codes: run "
        "TORCHSCAN_UPDATE_DOCS=1 python -m pytest tests/report/test_schema_docs.py and review the diff"
    )


def test_every_report_kind_has_a_section_link_and_a_writer_row() -> None:
    text = PAGE.read_text(encoding="utf-8")
    for kind in REPORT_KINDS:
        assert f"| `{kind}` | " in text.split("Which API writes which kind")[1], f"no writer row for {kind}"


def test_codes_named_in_the_docs_exist() -> None:
    """A code a page names in backticks that looks like one of ours must be in the CODES table."""
    suffixes = ("_operator", "_metric", "_formula", "_error", "_unavailable", "_range", "_ranks", "_storage")
    for page in DOCS:
        for word in set(re.findall(r"`([a-z]+(?:_[a-z]+)+)`", page.read_text(encoding="utf-8"))):
            if word.endswith(suffixes) and word.startswith(("unsupported", "uncounted", "module", "missing")):
                assert word in CODES, f"{page.name} names the diagnostic code {word!r}, which no code writes"
