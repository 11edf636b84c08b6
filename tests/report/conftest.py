"""Fixtures shared by the report tests."""

from __future__ import annotations

import json
from typing import Any

import pytest


@pytest.fixture(scope="session")
def corpus() -> list[tuple[str, Any]]:
    """Every report kind made by the library (report_corpus.py), once per run, read back through JSON."""
    from report_corpus import all_reports

    return [(label, json.loads(json.dumps(report))) for label, report in all_reports()]
