"""Every ```python block of README.md, docs/*.md and the shipped skill runs (blocks of one page share
a namespace), and every report a page leaves in its namespace validates against its JSON Schema.
The ```bash blocks of the agent pages run too (agent-quickstart, report-schema, the skill).

Documentation that no longer runs is a defect: an API that is not documented truthfully is not
finished.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from torchscan.report.json_schema import kind_of, schema_errors

ROOT = Path(__file__).resolve().parents[1]
SKILL = ROOT / "skills" / "torchscan" / "SKILL.md"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), SKILL]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
SHELL_BLOCK = re.compile(r"```bash\n(.*?)```", re.DOTALL)
# Pages whose shell examples are self-contained (the README's are installation commands).
SHELL_PAGES = [ROOT / "docs" / "agent-quickstart.md", ROOT / "docs" / "report-schema.md", SKILL]


def _reports(namespace: dict[str, object]) -> list[tuple[str, object]]:
    """Report-shaped values of the namespace, and those inside its lists, tuples and dicts."""
    found = []
    for name, value in namespace.items():
        if kind_of(value) is not None:
            found.append((name, value))
        elif isinstance(value, list | tuple):
            found += [(f"{name}[{i}]", item) for i, item in enumerate(value) if kind_of(item) is not None]
        elif isinstance(value, dict):
            found += [(f"{name}[{key!r}]", item) for key, item in value.items() if kind_of(item) is not None]
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_python_examples_run(page, tmp_path, monkeypatch, capsys):
    blocks = BLOCK.findall(page.read_text(encoding="utf-8"))
    if not blocks:
        pytest.skip(f"{page.name} has no python example")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for index, block in enumerate(blocks):
        code = compile(block, f"{page.name}[block {index}]", "exec")
        exec(code, namespace)
    pytest.importorskip("jsonschema")  # the `test` extra installs it
    for label, report in _reports(namespace):
        assert not schema_errors(report), f"{page.name}: {label} fails its JSON Schema"


@pytest.mark.parametrize("page", SHELL_PAGES, ids=lambda p: p.name)
def test_shell_examples_run(page, tmp_path):
    """Each ```bash block runs with ``set -euo pipefail`` in one folder, ``torchscan`` on the PATH."""
    blocks = SHELL_BLOCK.findall(page.read_text(encoding="utf-8"))
    if not blocks:
        pytest.skip(f"{page.name} has no shell example")
    pytest.importorskip("jsonschema")  # `torchscan schema --validate` needs it
    tools = tmp_path / "bin"
    tools.mkdir()
    shim = tools / "torchscan"  # this interpreter's torchscan, whatever scripts are installed
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m torchscan "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ.get('PATH', '')}"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    for index, block in enumerate(blocks):
        done = subprocess.run(
            ["bash", "-c", "set -euo pipefail\n" + block],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, f"{page.name}[bash block {index}]: {done.stderr[-2000:]}"


def test_every_docs_page_says_what_numbers_do_not_mean():
    for page in sorted((ROOT / "docs").glob("*.md")):
        text = page.read_text(encoding="utf-8").lower()
        assert "not mean" in text, f"{page.name} lacks a 'what this does not mean' section"
