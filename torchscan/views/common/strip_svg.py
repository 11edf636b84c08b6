"""Offline SVG strip plots of raw timing blocks for benchmark pages (issue 15 item 4).

Every recorded block is one dot at its per-call average ``t_i / number_per_run`` (workloads.md
5.3), with the median and the interquartile range marked, on a scale that starts at zero. A
comparison page draws both runs on one shared scale. The ``noisy`` label is descriptive: it says
that the spread of block averages is large next to their median, not that a difference is or is not
significant. Block averages are not request percentiles.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from torchscan.views.common.number_style import change as change_text
from torchscan.views.common.number_style import duration, quantity, share
from torchscan.views.common.text import esc

# ``noisy`` when IQR / median exceeds this (10 %): at that spread a 10 % change of the median is
# within the middle half of the blocks. Descriptive only; it is not a significance test.
NOISY_RATIO = 0.10
# Throughput and work units / median agree within this relative tolerance before a note is shown.
THROUGHPUT_TOLERANCE = 0.01
WIDTH = 900
LEFT = 110
RIGHT = 30
ROW = 56
TOP = 8
AXIS = 30


def block_averages(measurement: Mapping[str, Any]) -> list[float]:
    """Per-call block averages in seconds; empty when the blocks are missing or not positive numbers."""
    times = measurement.get("raw_times_seconds")
    per_run = measurement.get("number_per_run")
    if (
        not isinstance(times, list)
        or not isinstance(per_run, int)
        or isinstance(per_run, bool)
        or per_run <= 0
    ):
        return []
    values = []
    for t in times:
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t <= 0:
            return []
        values.append(float(t) / per_run)
    return values


def quantile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (NumPy's default, as workloads.md 5.3)."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def is_noisy(values: Sequence[float]) -> bool:
    """Whether IQR ÷ median of the block averages exceeds ``NOISY_RATIO`` (descriptive)."""
    if not values:
        return False
    median = quantile(values, 0.5)
    return median > 0 and (quantile(values, 0.75) - quantile(values, 0.25)) / median > NOISY_RATIO


def _ms(seconds: float) -> str:
    """A duration in ms/µs/s as people read it (issue 23 item 5): ``201.8 µs``, never e-notation."""
    # Block times near the float limit (a corrupt or hostile file) read as such, not as 309 digits.
    return duration(seconds) if math.isfinite(seconds * 1000) else "beyond the float range"


def calls_per_block(measurement: Mapping[str, Any]) -> int | None:
    """``number_per_run``: how many calls each block averages, or ``None`` when not recorded."""
    per_run = measurement.get("number_per_run")
    if isinstance(per_run, bool) or not isinstance(per_run, int) or per_run <= 0:
        return None
    return per_run


def layout_text(count: int, per_block: int | None) -> str:
    """``27 blocks × 100 calls`` (how a run was timed), or ``27 blocks`` when calls are unknown."""
    if per_block is None:
        return f"{count:,} blocks"
    return f"{count:,} blocks × {per_block:,} call{'s' if per_block != 1 else ''}"


def _row(values: Sequence[float], label: str, index: int, scale: float, per_block: int | None) -> str:
    top = TOP + index * ROW
    middle = top + ROW / 2
    median, q1, q3 = quantile(values, 0.5), quantile(values, 0.25), quantile(values, 0.75)
    calls = "" if per_block is None else f' data-calls-per-block="{per_block}"'
    parts = [
        f'<g class="strip-row" data-run="{esc(label)}" data-blocks="{len(values)}"{calls}>',
        f'<text x="4" y="{middle - 3:.1f}" font-size="12">{esc(label)}</text>',
        f'<text class="strip-layout" x="4" y="{middle + 11:.1f}" font-size="10">'
        f"{esc(layout_text(len(values), per_block))}</text>",
        f'<rect data-iqr="" x="{LEFT + q1 * scale:.2f}" y="{top + 6:.1f}" '
        f'width="{max((q3 - q1) * scale, 1):.2f}" height="{ROW - 12}" fill="#9fc4e8" fill-opacity="0.55" '
        'stroke="#2f6db5"/>',
    ]
    for k, value in enumerate(values):
        # Deterministic vertical spread (no randomness) so equal times do not hide each other.
        offset = ((k * 7) % 9 - 4) * 3.5
        parts.append(
            f'<circle data-block="{k}" cx="{LEFT + value * scale:.2f}" cy="{middle + offset:.1f}" r="3" '
            'fill="#111" fill-opacity="0.7"/>'
        )
    parts.append(
        f'<line data-median="" x1="{LEFT + median * scale:.2f}" x2="{LEFT + median * scale:.2f}" '
        f'y1="{top + 2:.1f}" y2="{top + ROW - 2:.1f}" stroke="#c0392b" stroke-width="3"/>'
    )
    parts.append("</g>")
    return "".join(parts)


def strip_plot(
    runs: Sequence[tuple[str, Sequence[float]]], per_block: Sequence[int | None] | None = None
) -> str:
    """An inline ``<svg class="strip-plot">`` of one or more runs on a shared zero-based scale.

    ``per_block`` gives each run's calls per block (``number_per_run``), printed under its label as
    ``27 blocks × 100 calls`` so two runs timed with different blocks are never read as alike.
    """
    counts = list(per_block) if per_block is not None else [None] * len(runs)
    layouts = {label: counts[k] for k, (label, _) in enumerate(runs)}
    drawn = [(label, values) for label, values in runs if values]
    if not drawn:
        return '<p class="note">No raw timing blocks were recorded, so there is nothing to plot.</p>'
    largest = max(max(values) for _, values in drawn)
    # Block times near the float limit: draw against a finite span rather than divide by inf.
    span = largest * 1.05 if math.isfinite(largest * 1.05) else largest
    scale = (WIDTH - LEFT - RIGHT) / span
    height = TOP + ROW * len(drawn) + AXIS
    axis_y = TOP + ROW * len(drawn) + 4
    ticks = []
    for fraction in (0, 0.25, 0.5, 0.75, 1):
        seconds = span * fraction
        x = LEFT + seconds * scale
        ticks.append(
            f'<line x1="{x:.2f}" x2="{x:.2f}" y1="{axis_y}" y2="{axis_y + 5}" stroke="#555"/>'
            f'<text x="{x:.2f}" y="{axis_y + 18}" font-size="11" text-anchor="middle">'
            f"{_ms(seconds) if seconds else '0'}</text>"
        )
    summary = "; ".join(
        f"{label}: {layout_text(len(values), layouts[label])}, median {_ms(quantile(values, 0.5))}, IQR "
        f"{_ms(quantile(values, 0.75) - quantile(values, 0.25))}"
        for label, values in drawn
    )
    rows = "".join(_row(values, label, k, scale, layouts[label]) for k, (label, values) in enumerate(drawn))
    return (
        f'<svg class="strip-plot" xmlns="http://www.w3.org/2000/svg" role="img" '
        f'aria-label="Per-call block averages. {esc(summary)}" viewBox="0 0 {WIDTH} {height}" '
        f'width="{WIDTH}" height="{height}" style="max-width:100%;height:auto" '
        'font-family="system-ui, sans-serif">'
        f"<title>Raw timing blocks: {esc(summary)}</title>"
        f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{axis_y}" y2="{axis_y}" stroke="#555"/>'
        f"{''.join(ticks)}{rows}</svg>"
    )


def _noise_words(label: str, values: Sequence[float]) -> str:
    if not values:
        return ""
    median = quantile(values, 0.5)
    ratio = (quantile(values, 0.75) - quantile(values, 0.25)) / median
    if ratio > NOISY_RATIO:
        return (
            f'<p class="noisy"><span class="badge warning">noisy</span> {esc(label)}: the IQR of the block '
            f"averages is {share(ratio)} of their median (above {share(NOISY_RATIO)}). This describes the "
            "spread; it is not a significance test. Close other work, pin threads or raise min_run_time, "
            "then measure again.</p>"
        )
    return ""


def throughput_note(report: Mapping[str, Any]) -> str:
    """One line when recorded throughput differs from work units ÷ median latency by more than 1 %."""
    totals = report["totals"]
    latency, throughput = totals.get("latency"), totals.get("throughput")
    units = report["context"].get("work_units")
    if (
        latency is None
        or throughput is None
        or latency["status"] != "complete"
        or throughput["status"] != "complete"
        or isinstance(units, bool)
        or not isinstance(units, (int, float))
        or latency["value"] <= 0
    ):
        return ""
    from_median = units / latency["value"]
    if abs(throughput["value"] - from_median) <= THROUGHPUT_TOLERANCE * from_median:
        return ""
    unit = throughput["unit"]
    return (
        f'<p class="note throughput-note">Throughput {esc(quantity(throughput["value"], unit))} is work '
        "units × measured calls ÷ total block time (a mean over every block), so it differs from work "
        f"units ÷ median latency ({esc(quantity(from_median, unit))}) when block times are uneven.</p>"
    )


def latency_section(report: Mapping[str, Any]) -> str:
    """Strip plot, ``noisy`` label and throughput note for one ``BenchmarkReport``."""
    values = block_averages(report["measurement"])
    per_block = [calls_per_block(report["measurement"])]
    return (
        '<section id="timing-blocks"><h2>Raw timing blocks</h2><p class="note">Each dot is one block\'s '
        "per-call average; the red line is the median, the band the interquartile range. Not request "
        f"percentiles.</p>{strip_plot([('This run', values)], per_block)}{_noise_words('This run', values)}"
        f"{throughput_note(report)}</section>"
    )


def _layout_note(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """A sentence when the two runs averaged different numbers of calls per block (not only a footnote).

    Only the calls per block change what one block averages over; a different number of blocks of
    the same size (one run kept timing a little longer) is the same timing layout and says nothing.
    """
    old, new = block_averages(before), block_averages(after)
    old_calls, new_calls = calls_per_block(before), calls_per_block(after)
    if not old or not new or old_calls == new_calls:
        return ""
    return (
        '<p class="layout-note"><strong>Different timing blocks:</strong> baseline '
        f"{esc(layout_text(len(old), old_calls))}, candidate {esc(layout_text(len(new), new_calls))}. A "
        "block of fewer calls averages over less, so its dots spread wider and its IQR is larger for the "
        "same code: compare the medians, and measure both with the same min_run_time before trusting a "
        "difference in spread.</p>"
    )


def _direction_note(comparison: Mapping[str, Any]) -> str:
    """A visible sentence when latency and throughput moved in contradicting directions."""
    totals = comparison.get("totals", {})
    latency, throughput = totals.get("latency") or {}, totals.get("throughput") or {}
    if latency.get("delta") is None or throughput.get("delta") is None:
        return ""
    if not (latency["delta"] < 0 and throughput["delta"] < 0) and not (
        latency["delta"] > 0 and throughput["delta"] > 0
    ):
        return ""

    def change(entry: Mapping[str, Any]) -> str:
        before = (entry.get("before") or {}).get("value")
        return change_text(entry["delta"], (entry.get("after") or {}).get("unit", ""), before)

    better = "improved" if latency["delta"] < 0 else "worsened"
    moved = "fell" if throughput["delta"] < 0 else "rose"
    return (
        f'<p class="direction-note"><strong>Latency {better} ({esc(change(latency))}) while throughput '
        f"{moved} ({esc(change(throughput))}).</strong> Latency is the median block average; throughput "
        "is work units × measured calls ÷ total block time, a mean over every block, so a few slow blocks "
        "lower it without moving the median. Look at the strips below before reporting either.</p>"
    )


def comparison_section(comparison: Mapping[str, Any]) -> str:
    """Both runs' strip plots on one scale, labelled blocks × calls, with their ``noisy`` labels."""
    before_run, after_run = comparison["before"]["measurement"], comparison["after"]["measurement"]
    before, after = block_averages(before_run), block_averages(after_run)
    per_block = [calls_per_block(before_run), calls_per_block(after_run)]
    return (
        '<section id="timing-blocks"><h2>Raw timing blocks, baseline and candidate</h2><p class="note">Both '
        "runs share one zero-based scale; each dot is one block's per-call average, the red line the "
        "median, the band the interquartile range; under each label, how the run was timed (blocks × "
        f"calls per block).</p>{_direction_note(comparison)}{_layout_note(before_run, after_run)}"
        f"{strip_plot([('Baseline', before), ('Candidate', after)], per_block)}"
        f"{_noise_words('Baseline', before)}{_noise_words('Candidate', after)}"
        f"{throughput_note(comparison['before'])}{throughput_note(comparison['after'])}</section>"
    )
