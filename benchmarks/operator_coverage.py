"""The operator coverage table: how TorchScan counts every ``aten`` and ``torchvision`` overload.

Usage: ``python benchmarks/operator_coverage.py [--markdown FILE] [--sources FILE]`` (run it with the
environment whose torch/torchvision the table describes; ``docs/operator-coverage.md`` is made with
torch 2.14.1 + torchvision 0.29.1). Prints the Markdown and the share classified on stderr.

``--sources benchmarks/data/formula_sources.json`` records, for the running torch, which formula
counts each operator PyTorch's ``FlopCounterMode`` has a formula for (torch-versions.md 1): run it
once under every tested torch; the Markdown's "Formula source by torch" table reads that file, and a
test on each tested torch checks its own entry against the running classification.

Every overload registered with PyTorch's dispatcher under the ``aten`` and ``torchvision`` namespaces
is classified by :func:`torchscan.analysis.dispatch.resolution.classify_overload` — the decision
``resolve`` makes (and the operator observer caches) on the first call of an overload, so the table
cannot drift from counting:

- ``formula``: one of TorchScan's own ``torchscan_flops_v1`` formulas (reference-checked), an
  inherited ``FlopCounterMode`` formula (only for an operator TorchScan never classified: none on the
  tested torches), or the pointwise fallback (real-models.md 2.2), shown apart as
  ``formula (pointwise fallback)``;
- ``ignored``: zero FLOPs by a stated rule, with its reason (formulas.md B.6, real-models.md 2.1);
- ``decomposed``: a ``CompositeImplicitAutograd`` overload, counted through its parts;
- ``communication``: a collective, tallied as bytes (distributed.md 3), never FLOPs;
- ``uncounted``: none of the above; a call of it makes operator FLOPs ``partial`` with
  ``uncounted_operator`` — never a silent zero.

Classification is by overload only. Some formulas still refuse a particular call (a sparse layout, an
unsupported option named by ``unsupported_operator_formula``): the table says how an overload is
counted, not that every call of it is complete.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's library, as zoo.py

import torch

from torchscan.analysis.dispatch import higher_order, higher_order_counts, resolution
from torchscan.formulas import attention_kernels, provenance
from torchscan.runtime import torch_versions

SOURCES = Path(__file__).resolve().parent / "data" / "formula_sources.json"
TORCHSCAN, CHECKED, UNCHECKED = "TorchScan", "inherited, checked", "inherited, not checked"

NAMESPACES = ("aten", "torchvision")
CLASSES = ("formula", "formula (pointwise fallback)", "ignored", "decomposed", "communication", "uncounted")
_KIND_CLASS = {  # classify_overload's kinds -> the table's classes
    "inherited": "formula",
    "supplemental": "formula",
    "custom": "formula",
    "pointwise": "formula (pointwise fallback)",
    "foreach": "formula",
    "ignored": "ignored",
    "decomposed": "decomposed",
    "communication": "communication",
    "uncounted": "uncounted",
}


def overloads(namespaces: tuple[str, ...] = NAMESPACES) -> list[Any]:
    """Every ``OpOverload`` registered under ``namespaces``, sorted by qualified name.

    torchvision's operators exist only once ``torchvision`` is imported; it is imported when installed.
    """
    if "torchvision" in namespaces:
        try:
            import torchvision  # noqa: F401 - registers torch.ops.torchvision
        except ImportError:
            pass
    packets: set[tuple[str, str]] = set()
    for qualified in torch._C._dispatch_get_all_op_names():
        namespace, _, rest = qualified.partition("::")
        if namespace in namespaces:
            packets.add((namespace, rest.split(".", 1)[0]))
    found = []
    for namespace, name in sorted(packets):
        try:
            packet = getattr(getattr(torch.ops, namespace), name)
            names = packet.overloads()
        except (AttributeError, RuntimeError):
            continue
        for overload in names:
            try:
                found.append(getattr(packet, overload))
            except (AttributeError, RuntimeError):
                continue
    return sorted(found, key=str)


def classify(func: Any, native: Any = None) -> tuple[str, str | None]:
    """``(class, reason)`` of one overload: ``classify_overload``, the decision real counting makes."""
    kind, reason = resolution.classify_overload(func, native_formulas=native)
    return _KIND_CLASS[kind], reason if kind == "ignored" else None


def table(namespaces: tuple[str, ...] = NAMESPACES) -> list[tuple[str, str, str | None]]:
    """``(overload, class, reason)`` for every overload of ``namespaces``."""
    native = resolution.native_registry()
    return [(str(func), *classify(func, native)) for func in overloads(namespaces)]


def formula_sources() -> dict[str, str]:
    """Which formula counts each operator the running torch's ``FlopCounterMode`` has one for.

    ``TorchScan`` (its own formula, classification or higher-order operator rule wins), ``inherited,
    checked`` (PyTorch's, listed in ``provenance.CHECKED_INHERITED`` for this torch) or ``inherited,
    not checked`` (PyTorch's: left out of totals with ``unverified_inherited_formula``). An operator
    packet is inherited when any of its overloads is.
    """
    native = resolution.native_registry()
    sources = {}
    for packet in native:
        if higher_order.is_higher_order(packet):  # the observer's own rules (higher_order_counts)
            name = higher_order.operator_name(packet)
            sources[name] = TORCHSCAN if name in higher_order_counts.FORMULAS else UNCHECKED
            continue
        name = str(packet)
        kinds = {
            resolution.classify_overload(getattr(packet, o), native_formulas=native)[0]
            for o in packet.overloads()
        }
        if "inherited" not in kinds:
            sources[name] = TORCHSCAN
        elif resolution.inherited_verified(name, native[packet]):
            sources[name] = CHECKED
        else:
            sources[name] = UNCHECKED
    return dict(sorted(sources.items()))


def record_sources(path: Path = SOURCES) -> dict[str, dict[str, str]]:
    """Write the running torch's :func:`formula_sources` into ``path`` under its release, keeping the
    other releases' entries; returns the whole file's content."""
    recorded = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    recorded[torch_versions.installed_release()] = formula_sources()
    recorded = dict(sorted(recorded.items(), key=lambda item: torch_versions.release(item[0])))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(recorded, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    return recorded


def sources_markdown(recorded: dict[str, dict[str, str]]) -> list[str]:
    """The "Formula source by torch" and "Corrections" sections (torch-versions.md 1, truth.md 1)."""
    releases = list(recorded)
    operators = sorted({name for sources in recorded.values() for name in sources})
    lines = [
        "## Formula source by torch",
        "",
        "Every operator PyTorch's `FlopCounterMode` has a formula for on a tested torch, and which formula "
        "TorchScan counts it with there (torch-versions.md 1; recorded by `--sources` under each tested "
        "torch, checked by a test on each). `TorchScan`: its own reference-checked formula, whatever "
        "FlopCounterMode registers; `inherited, checked`: PyTorch's, checked by the reference suite on "
        "that torch; `—`: FlopCounterMode has no formula for it on that torch (TorchScan still counts it).",
        "",
        "| operator | " + " | ".join(f"torch {release}" for release in releases) + " |",
        "| --- | " + " | ".join("---" for _ in releases) + " |",
    ]
    for name in operators:
        lines.append(
            f"| `{name}` | " + " | ".join(recorded[release].get(name, "—") for release in releases) + " |"
        )
    lines += [
        "",
        "## Corrections",
        "",
        "Formulas the reference suite (`tests/formulas/reference/`) found wrong — inherited ones TorchScan "
        "overrides and its own earlier ones — with what changed (`torchscan/formulas/provenance.py`).",
        "",
        "| operator | what the reference showed |",
        "| --- | --- |",
    ]
    lines += [f"| `{name}` | {text} |" for name, text in sorted(provenance.CORRECTIONS.items())]
    lines += [
        "",
        "## Fused attention: which kernels skip masked pairs",
        "",
        "attention-and-scaling.md 1: a kernel that skips masked work counts only the (query, key) pairs "
        "its mask keeps; one that computes every score counts every pair. Each backward counts the pairs "
        "its forward kept.",
        "",
        "| kernel | masks |",
        "| --- | --- |",
    ]
    lines += [f"| `aten.{name}` | {text} |" for name, text in attention_kernels.MASKING.items()]
    return lines


def share_classified(rows: list[tuple[str, str, str | None]], namespace: str = "aten") -> float:
    """The share of a namespace's overloads that are not ``uncounted``."""
    mine = [row for row in rows if row[0].startswith(namespace + ".")]
    return sum(1 for row in mine if row[1] != "uncounted") / len(mine) if mine else 0.0


def markdown(rows: list[tuple[str, str, str | None]]) -> str:
    """The coverage table as Markdown: counts per namespace and class, ignored reasons, every overload."""
    try:
        import torchvision

        vision = torchvision.__version__
    except ImportError:
        vision = "not installed"
    lines = [
        "# Operator coverage",
        "",
        "Generated by `python benchmarks/operator_coverage.py --markdown docs/operator-coverage.md` from "
        f"torch {torch.__version__} and torchvision {vision}; do not edit by hand. Each overload is "
        "classified by `torchscan.analysis.dispatch.resolution.classify_overload`, the decision "
        "`resolve` makes for real counting on the first call of that overload (families.md 1). "
        "`formula` covers TorchScan's "
        "own `torchscan_flops_v1` formulas and, for an operator TorchScan never classified, PyTorch's "
        'inherited `FlopCounterMode` formula (none on the tested torches: see "Formula source by '
        'torch"); the pointwise fallback (one FLOP per output element of a `torch.Tag.pointwise` '
        "overload) is shown apart.",
        "",
        "## Counts",
        "",
        "| namespace | overloads | " + " | ".join(CLASSES) + " | classified |",
        "| --- | ---: | " + " | ".join("---:" for _ in CLASSES) + " | ---: |",
    ]
    for namespace in NAMESPACES:
        mine = [row for row in rows if row[0].startswith(namespace + ".")]
        if not mine:
            continue
        counts = Counter(row[1] for row in mine)
        share = share_classified(rows, namespace)
        lines.append(
            f"| {namespace} | {len(mine):,} | "
            + " | ".join(f"{counts.get(name, 0):,}" for name in CLASSES)
            + f" | {share:.1%} |"
        )
    lines += [
        "",
        "## What this table does not mean",
        "",
        "It classifies overloads, not calls: a `formula` overload can still leave one call partial "
        "(`unsupported_operator_formula` for a sparse or nested argument, complex values, or an option the "
        "formula names, such as an adaptive `sampling_ratio`). `decomposed` means the overload's parts are "
        "classified when it runs, not that every part has a formula. An overload absent from the installed "
        "torch/torchvision is not listed, and the shares are not a measure of how much of a model's work is "
        "counted: the zoo (`benchmarks/zoo.py`) measures that on real models.",
    ]
    if SOURCES.exists():
        lines += ["", *sources_markdown(json.loads(SOURCES.read_text(encoding="utf-8")))]
    reasons = Counter(row[2] for row in rows if row[1] == "ignored")
    lines += ["", "## Ignored, by reason", "", "| reason | overloads |", "| --- | ---: |"]
    lines += [
        f"| {reason} | {count:,} |" for reason, count in sorted(reasons.items(), key=lambda r: (-r[1], r[0]))
    ]
    lines += ["", "## Every overload", "", "| overload | class | reason |", "| --- | --- | --- |"]
    lines += [f"| `{name}` | {kind} | {reason or ''} |" for name, kind, reason in rows]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: print the table, write it to ``--markdown``, report the share."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--markdown", type=Path, help="also write the Markdown to this file")
    parser.add_argument(
        "--sources", type=Path, help="record the running torch's formula sources in this JSON file first"
    )
    options = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if options.sources:
        record_sources(options.sources)
    rows = table()
    text = markdown(rows)
    print(text, end="")
    if options.markdown:
        options.markdown.write_text(text, encoding="utf-8")
    aten = [row for row in rows if row[0].startswith("aten.")]
    print(
        f"aten overloads classified (not uncounted): {share_classified(rows):.1%} of {len(aten):,} "
        f"(target ≥ 95 %); all namespaces: {sum(1 for r in rows if r[1] != 'uncounted'):,}/{len(rows):,}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
