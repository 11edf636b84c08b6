"""Model-supplied names are escaped into valid report text (issue #20, item 5)."""

from __future__ import annotations

import pytest

from torchscan.report.names import has_control, report_name


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("layer1", "layer1"),
        ("héllo wörld", "héllo wörld"),
        ("a\x1b[31mb", "a\\x1b[31mb"),
        ("tab\there\nnl", "tab\\x09here\\x0anl"),
        ("del\x7fc1\x9b", "del\\x7fc1\\x9b"),
        ("lone\ud800", "lone\\ud800"),
        ("nonchar\ufffe", "nonchar\\ufffe"),
    ],
)
def test_report_name_escapes_only_what_a_report_or_terminal_cannot_take(name: str, expected: str) -> None:
    assert report_name(name) == expected
    assert has_control(name) is (name != expected)
    assert report_name(expected) == expected  # escaped text is clean: escaping twice changes nothing
