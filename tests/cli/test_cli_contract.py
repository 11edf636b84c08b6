"""``torchscan skill`` and ``torchscan schema``; every report the CLI writes validates against its schema.

The skill has one source: ``skills/torchscan/SKILL.md`` in the repository; the package's
``torchscan/skill/SKILL.md`` (package data, what ``torchscan skill`` prints) is a symbolic link to
it. Its relative links must resolve from both places in a checkout.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from torchscan.cli import main
from torchscan.cli.contract import skill_text
from torchscan.report.json_schema import REPORT_KINDS, kind_of, report_schema

ROOT = Path(__file__).resolve().parents[2]
SKILL = ROOT / "skills" / "torchscan" / "SKILL.md"
PACKAGED = ROOT / "torchscan" / "skill" / "SKILL.md"
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_skill_has_front_matter_with_name_and_one_sentence_description() -> None:
    text = SKILL.read_text(encoding="utf-8")
    match = re.match(r"---\nname: (.+)\ndescription: (.+)\n---\n", text)
    assert match, "SKILL.md must open with front matter: name, then description"
    assert match[1] == "torchscan"
    description = match[2]
    assert description.endswith(".") and description.count(". ") == 0, "one sentence"


def test_packaged_skill_is_the_repository_skill() -> None:
    assert PACKAGED.read_bytes() == SKILL.read_bytes()
    assert skill_text() == SKILL.read_text(encoding="utf-8")


@pytest.mark.parametrize("where", [SKILL, PACKAGED], ids=["skills", "package"])
def test_skill_links_resolve_in_a_checkout(where: Path) -> None:
    links = LINK.findall(SKILL.read_text(encoding="utf-8"))
    assert len(links) >= 5
    for link in links:
        assert not re.match(r"[a-z]+:", link), f"{link}: links stay relative"
        assert (where.parent / link).resolve().is_file(), f"{link} does not resolve from {where}"


def test_skill_names_the_public_apis_it_recommends() -> None:
    import torchscan

    names = set(re.findall(r"torchscan\.([a-zA-Z_]+)\(", SKILL.read_text(encoding="utf-8")))
    assert names <= set(torchscan.__all__), names - set(torchscan.__all__)


def test_skill_command_prints_the_skill(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["skill"]) == 0
    assert capsys.readouterr().out == SKILL.read_text(encoding="utf-8")


@pytest.mark.parametrize("kind", list(REPORT_KINDS))
def test_schema_command_prints_the_generated_schema(kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", kind]) == 0
    assert json.loads(capsys.readouterr().out) == report_schema(kind)


@pytest.mark.parametrize("argv", [["schema", "scan"], ["schema"]])
def test_schema_without_a_known_kind_is_one_line_naming_the_kinds(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert "known kinds: " + ", ".join(REPORT_KINDS) in captured.err


def test_validate_names_the_path_and_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("jsonschema")
    saved = tmp_path / "report.json"
    assert main(["flops", "demo:cnn", "--json", str(saved)]) == 0
    assert main(["schema", "flop", "--validate", str(saved)]) == 0
    assert "a valid flop report" in capsys.readouterr().out
    report = json.loads(saved.read_text(encoding="utf-8"))
    report["total"]["unit"] = 7
    saved.write_text(json.dumps(report), encoding="utf-8")
    assert main(["schema", "flop", "--validate", str(saved)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "$.total.unit: 7 is not of type 'string' (rule: type)" in err
    report["schema_version"] = 3
    saved.write_text(json.dumps(report), encoding="utf-8")
    assert main(["schema", "flop", "--validate", str(saved)]) == 2
    assert "unsupported schema_version 3" in capsys.readouterr().err
    assert main(["schema", "memory", "--validate", str(saved)]) == 2  # a flop report is no memory report


def test_every_report_the_cli_writes_validates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """scan, flops, memory, latency, compare and merge write reports; each fits its kind's schema."""
    pytest.importorskip("jsonschema")
    from torchscan.report.json_schema import schema_errors

    out = {
        name: str(tmp_path / f"{name}.json") for name in ("scan", "structure", "flops", "memory", "latency")
    }
    out |= {"compare": str(tmp_path / "compare.json"), "memcompare": str(tmp_path / "memcompare.json")}
    assert main(["scan", "demo:cnn", "--json", out["scan"]]) == 0
    assert main(["scan", "demo:transformer", "--mode", "structure", "--json", out["structure"]]) == 0
    assert main(["flops", "demo:cnn", "--train", "--json", out["flops"]]) == 0
    assert main(["memory", "demo:cnn", "--train", "--json", out["memory"]]) == 0
    quick = ["--warmup", "1", "--min-run-time", "0.01", "--min-repeats", "2"]
    assert main(["latency", "demo:cnn", *quick, "--json", out["latency"]]) == 0
    assert main(["compare", out["scan"], out["structure"], "--json", out["compare"]]) == 0
    assert main(["compare", out["memory"], out["memory"], "--json", out["memcompare"]]) == 0
    capsys.readouterr()
    kinds = set()
    for name, path in out.items():
        report = json.loads(Path(path).read_text(encoding="utf-8"))
        kind = kind_of(report)
        kinds.add(kind)
        assert not schema_errors(report), f"torchscan {name}: {schema_errors(report)[:3]}"
    assert kinds == {"analysis", "flop", "memory", "benchmark", "report_diff", "memory_comparison"}
