"""Reference checks of the statistical reductions, scans, histograms and vector products (truth.md 1, 5).

Reference (a): each kernel re-implemented from element-wise operators, reductions and products under
:class:`ElementaryCounter` (a reduction of ``k`` values ``k − 1`` adds or comparisons, products at
``2·MACs``), following the algorithm the kernel runs — its nested operators where the profiler shows
them (``logsumexp``: ``amax``, the ``abs``/``eq``/``masked_fill`` guard of infinite maxima, ``sub``,
``exp``, ``sum``, ``log``, ``add``; ``histc`` and ``histogram`` without a range: the data's ``aminmax``
first; ``density``: a sum, a divide, the bin widths and a divide per bin and dimension):

* variance ``Σ(x − mean)²/(n − c)``, standard deviation (a root more), ``prod`` (a chain of
  multiplies), ``nansum`` (a NaN test per element, its replacement a selection like ``nan_to_num``),
  ``logsumexp``, ``count_nonzero`` (the comparisons; counting them is integer work, B.7.1), ``trace``,
  ``amax``/``amin``/``max``/``min``/``aminmax``/``argmax``/``argmin`` (comparisons), ``mean``;
* scans step by step along ``dim``: ``cumsum``, ``cumprod``, ``cummax``/``cummin`` (comparisons),
  (``logcumsumexp`` stays uncounted: the project's docs and tests use it as their example of an
  operator without a formula);
* histograms: the bin index is computed outside the count (formulas' convention: finding the bin is not
  counted), each value (or weight) added into its bin;
* vector norms and ``Σ|x|^ord`` (``abs`` and ``pow`` for orders other than 1 and 2), ``dot``,
  ``vdot``, ``mv`` (products).

Values are checked against PyTorch before counts are compared through real dispatch.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

import pytest
import torch

from reference.elementary import elementary_count
from reference.harness import cases, library_count, seeded

Tensor = torch.Tensor


def rows_of(x: Tensor, dims: tuple[int, ...]) -> Tensor:
    """``x`` with the reduced dims moved last and flattened: ``(kept..., k)`` (a view or copy)."""
    moved = x.movedim(dims, tuple(range(-len(dims), 0)))
    return moved.reshape(*moved.shape[: x.dim() - len(dims)], -1)


def chain(x: Tensor, dims: tuple[int, ...], op: Callable[[Tensor, Tensor], Tensor]) -> Tensor:
    """Reduce rows by ``k − 1`` applications of ``op``."""
    rows = rows_of(x, dims)
    acc = rows[..., 0]
    for j in range(1, rows.shape[-1]):
        acc = op(acc, rows[..., j])
    return acc


def scan(x: Tensor, dim: int, step: Callable[[Tensor, Tensor], Tensor]) -> Tensor:
    """An inclusive scan along ``dim``: ``width − 1`` steps per row."""
    values = [x.select(dim, 0)]
    for i in range(1, x.shape[dim]):
        values.append(step(values[-1], x.select(dim, i)))
    return torch.stack(values, dim)


def bin_index(x: Tensor, bins: int, low: float, high: float) -> Tensor:
    """The bin of every value, as PyTorch's histogram kernels compute it (uncounted by convention)."""
    index = ((x - low) * bins / (high - low)).floor().long()
    return index.clamp(0, bins - 1)


def add_into(bins: int, index: Tensor, values: Tensor) -> Tensor:
    return torch.zeros(bins, dtype=values.dtype).index_add(0, index, values)


def density(hist: Tensor, edges: list[Tensor]) -> Tensor:
    """``hist / Σ hist / Π widths``: a sum, a divide per bin; per dimension the widths and a divide."""
    hist = hist / hist.sum()
    for d, edge in enumerate(edges):
        widths = edge[1:] - edge[:-1]
        shape = [1] * hist.dim()
        shape[d] = -1
        hist = hist / widths.reshape(shape)
    return hist


class Case:
    """One call: ``operators`` (the packets it dispatches), the call, a counted reference, a check."""

    operators: tuple[str, ...]
    call: Callable[[], Any]
    reference: Callable[[], tuple[Any, int]]
    check: Callable[[Any], None]

    def __init__(self, rng: random.Random) -> None:
        self.generator = seeded(rng)
        self.rng = rng
        kind = rng.choice(
            [
                "var",
                "std",
                "var_mean",
                "std_mean",
                "prod",
                "nansum",
                "logsumexp",
                "count_nonzero",
                "trace",
                "amax",
                "amin",
                "max",
                "min",
                "aminmax",
                "argmax",
                "argmin",
                "mean",
                "cumsum",
                "cumprod",
                "cummax",
                "cummin",
                "histc",
                "bincount",
                "histogram",
                "histogramdd",
                "norm",
                "vector_norm",
                "powsum",
                "dot",
                "vdot",
                "mv",
            ]
        )
        self.kind = kind
        getattr(self, f"_{kind}" if hasattr(self, f"_{kind}") else "_reduction")()

    # helpers ---------------------------------------------------------------------------------------
    def _tensor(self, *shape: int) -> Tensor:
        return torch.randn(shape, generator=self.generator, dtype=torch.float64)

    def _shape(self) -> list[int]:
        return [self.rng.randint(1, 5) for _ in range(self.rng.randint(1, 3))]

    def _dims(self, rank: int) -> tuple[int, ...]:
        return tuple(sorted(self.rng.sample(range(rank), self.rng.randint(1, rank))))

    def _counted(self, workload: Callable[[], Any], **options: Any) -> Callable[[], tuple[Any, int]]:
        def run() -> tuple[Any, int]:
            value, counter = elementary_count(workload, **options)
            return value, counter.flops

        return run

    def _set(
        self,
        operators: tuple[str, ...],
        call: Callable[[], Any],
        reference: Callable[[], Any],
        expected: Callable[[], Any],
        **options: Any,
    ) -> None:
        self.operators, self.call = operators, call
        self.reference = self._counted(reference, **options)
        self.check = lambda value: _close(value, expected())

    # reductions ------------------------------------------------------------------------------------
    def _reduction(self) -> None:
        kind, x = self.kind, self._tensor(*self._shape())
        dims, keep = self._dims(x.dim()), self.rng.random() < 0.5
        one = (dims[0],)
        if kind in ("var", "std", "var_mean", "std_mean"):
            n = math.prod(x.shape[d] for d in dims)
            correction = self.rng.choice([0, 1]) if n > 1 else 0

            def moments() -> Any:
                mean = x.sum(dims, keepdim=True) / n
                diff = x - mean
                var = (diff * diff).sum(dims, keepdim=keep) / (n - correction)
                value = torch.sqrt(var) if kind.startswith("std") else var
                return (value, mean if keep else mean.squeeze(dims)) if kind.endswith("_mean") else value

            function = getattr(torch, kind)
            self._set(
                (f"aten.{kind}",),
                lambda: function(x, dims, correction=correction, keepdim=keep),
                moments,
                lambda: function(x, dims, correction=correction, keepdim=keep),
            )
        elif kind == "prod":
            self._set(
                ("aten.prod",),
                lambda: torch.prod(x, one[0]),
                lambda: chain(x, one, torch.mul),
                lambda: torch.prod(x, one[0]),
            )
        elif kind == "nansum":
            x[x > 1] = math.nan
            self._set(
                ("aten.nansum",),
                lambda: torch.nansum(x, dims, keepdim=keep),
                lambda: torch.where(x != x, 0.0, x).sum(dims, keepdim=keep),
                lambda: torch.nansum(x, dims, keepdim=keep),
                free_selection=True,
            )
        elif kind == "logsumexp":
            if self.rng.random() < 0.3:
                x[(0,) * x.dim()] = -math.inf

            def logsumexp() -> Tensor:
                m = x.amax(dims, keepdim=True)
                m = torch.where(torch.abs(m) == math.inf, 0.0, m)
                s = torch.exp(x - m).sum(dims, keepdim=True)
                result = torch.log(s) + m
                return result if keep else result.squeeze(dims)

            self._set(
                ("aten.logsumexp",),
                lambda: torch.logsumexp(x, dims, keepdim=keep),
                logsumexp,
                lambda: torch.logsumexp(x, dims, keepdim=keep),
            )
        elif kind == "count_nonzero":
            x[x.abs() < 0.5] = 0.0
            self._set(
                ("aten.count_nonzero",), lambda: torch.count_nonzero(x, dims), lambda: x != 0, lambda: x != 0
            )
            self.check = lambda value: torch.testing.assert_close(
                value.sum(dims), torch.count_nonzero(x, dims)
            )
        elif kind in ("amax", "amin"):
            function = getattr(torch, kind)
            self._set(
                (f"aten.{kind}",),
                lambda: function(x, dims, keepdim=keep),
                lambda: function(x, dims, keepdim=keep),
                lambda: function(x, dims, keepdim=keep),
            )
        elif kind in ("max", "min", "argmax", "argmin"):
            extreme = torch.amax if kind in ("max", "argmax") else torch.amin
            function = getattr(torch, kind)
            self._set(
                (f"aten.{kind}",),
                lambda: function(x, one[0], keepdim=keep),
                lambda: extreme(x, one, keepdim=keep),
                lambda: extreme(x, one, keepdim=keep),
            )
            if kind in ("argmax", "argmin"):
                self.check = lambda value: torch.testing.assert_close(
                    value,
                    x.gather(one[0], function(x, one[0], keepdim=True)).squeeze(one[0])
                    if not keep
                    else x.gather(one[0], function(x, one[0], keepdim=True)),
                )
            else:
                self.check = lambda value: torch.testing.assert_close(
                    value, function(x, one[0], keepdim=keep).values
                )
        elif kind == "aminmax":
            self._set(
                ("aten.aminmax",),
                lambda: torch.aminmax(x, dim=one[0], keepdim=keep),
                lambda: (torch.amin(x, one, keepdim=keep), torch.amax(x, one, keepdim=keep)),
                lambda: tuple(torch.aminmax(x, dim=one[0], keepdim=keep)),
            )
        elif kind == "mean":
            n = math.prod(x.shape[d] for d in dims)
            self._set(
                ("aten.mean",),
                lambda: torch.mean(x, dims, keepdim=keep),
                lambda: x.sum(dims, keepdim=keep) / n,
                lambda: torch.mean(x, dims, keepdim=keep),
            )
        elif kind in ("norm", "vector_norm"):
            order = self.rng.choice([2, 1, math.inf, -math.inf])

            def norm() -> Tensor:
                if order == 2:
                    return torch.sqrt((x * x).sum(dims, keepdim=keep))
                if order == 1:
                    return torch.abs(x).sum(dims, keepdim=keep)
                return (torch.amax if order > 0 else torch.amin)(torch.abs(x), dims, keepdim=keep)

            if kind == "norm":
                call = lambda: torch.ops.aten.norm.ScalarOpt_dim(x, order, list(dims), keep)  # noqa: E731
            else:
                call = lambda: torch.linalg.vector_norm(x, order, dims, keep)  # noqa: E731
            self._set((f"aten.{'norm' if kind == 'norm' else 'linalg_vector_norm'}",), call, norm, call)
        else:  # powsum
            order = self.rng.choice([2, 1, 3, 0.5, 0, math.inf])

            def power_sum() -> Tensor:  # orders 0 and inf are powers too: |x|^0 = 1, |x|^inf
                if order == 2:
                    return (x * x).sum(dims, keepdim=keep)
                if order == 1:
                    return torch.abs(x).sum(dims, keepdim=keep)
                return torch.pow(torch.abs(x), order).sum(dims, keepdim=keep)

            call = lambda: torch.ops.aten.linalg__powsum(x, order, list(dims), keep)  # noqa: E731
            self._set(("aten.linalg__powsum",), call, power_sum, call)

    def _trace(self) -> None:
        x = self._tensor(self.rng.randint(1, 5), self.rng.randint(1, 5))
        self._set(
            ("aten.trace",), lambda: torch.trace(x), lambda: torch.diagonal(x).sum(), lambda: torch.trace(x)
        )

    # scans -----------------------------------------------------------------------------------------
    def _scan(self) -> None:
        x = self._tensor(*self._shape())
        dim = self.rng.randrange(x.dim())
        steps = {
            "cumsum": torch.add,
            "cumprod": torch.mul,
            "cummax": torch.maximum,
            "cummin": torch.minimum,
        }
        function = getattr(torch, self.kind)
        operators = (f"aten.{self.kind}", f"aten._{self.kind}", f"aten._{self.kind}_helper")
        expected = (
            (lambda: function(x, dim).values)
            if self.kind in ("cummax", "cummin")
            else (lambda: function(x, dim))
        )
        self._set(operators, lambda: function(x, dim), lambda: scan(x, dim, steps[self.kind]), expected)

    _cumsum = _cumprod = _cummax = _cummin = _scan

    # histograms --------------------------------------------------------------------------------------
    def _histc(self) -> None:
        x = torch.rand(self.rng.randint(1, 30), generator=self.generator, dtype=torch.float64)
        bins = self.rng.randint(1, 6)
        ranged = self.rng.random() < 0.5
        low, high = (-0.5, 1.5) if ranged else (0.0, 0.0)

        def histc() -> tuple[Tensor, int]:
            flops = 0
            lo, hi = low, high
            if not ranged:  # the data's own bounds, found first (aminmax)
                (lo_t, hi_t), counter = elementary_count(lambda: (x.amin(), x.amax()))
                flops, lo, hi = counter.flops, float(lo_t), float(hi_t)
            index = bin_index(x, bins, lo, hi)
            hist, counter = elementary_count(lambda: add_into(bins, index, torch.ones_like(x)))
            return hist, flops + counter.flops

        self.operators, self.call, self.reference = (
            ("aten.histc",),
            lambda: torch.histc(x, bins, low, high),
            histc,
        )
        self.check = lambda value: _close(value, torch.histc(x, bins, low, high))

    def _bincount(self) -> None:
        n, size = self.rng.randint(1, 20), self.rng.randint(1, 6)
        ids = torch.randint(0, size, (n,), generator=self.generator)
        weights = self._tensor(n) if self.rng.random() < 0.7 else None
        if weights is None:  # integer occurrences: integer work, 0 (B.7.1)
            self.operators, self.call = ("aten.bincount",), lambda: torch.bincount(ids)
            self.reference, self.check = (lambda: (torch.bincount(ids), 0)), (lambda value: None)
            return
        top = int(ids.max()) + 1
        self._set(
            ("aten.bincount",),
            lambda: torch.bincount(ids, weights),
            lambda: add_into(top, ids, weights),
            lambda: torch.bincount(ids, weights),
        )

    def _histogram(self) -> None:
        x = torch.rand(self.rng.randint(2, 30), generator=self.generator, dtype=torch.float64)
        weight = (
            torch.rand(x.shape, generator=self.generator, dtype=torch.float64)
            if self.rng.random() < 0.4
            else None
        )
        wants_density = self.rng.random() < 0.5
        bins = self.rng.randint(1, 6)
        mode = self.rng.choice(["count", "count_range", "edges"])
        options = {"weight": weight, "density": wants_density}
        if mode == "edges":
            edges = torch.linspace(-0.25, 1.25, bins + 1, dtype=torch.float64)
            call = lambda: torch.histogram(x, edges, **options)  # noqa: E731
        elif mode == "count_range":
            call = lambda: torch.histogram(x, bins, range=(-0.5, 1.5), **options)  # noqa: E731
        else:
            call = lambda: torch.histogram(x, bins, **options)  # noqa: E731

        def histogram() -> tuple[tuple[Tensor, Tensor], int]:
            flops, (low, high) = 0, ((-0.25, 1.25) if mode == "edges" else (-0.5, 1.5))
            if mode == "count":
                (lo_t, hi_t), counter = elementary_count(lambda: (x.amin(), x.amax()))
                flops, low, high = counter.flops, float(lo_t), float(hi_t)
            index = bin_index(x, bins, low, high)
            edge = torch.linspace(low, high, bins + 1, dtype=torch.float64)

            def count() -> Tensor:
                hist = add_into(bins, index, weight if weight is not None else torch.ones_like(x))
                return density(hist, [edge]) if wants_density else hist

            hist, counter = elementary_count(count)
            return (hist, edge), flops + counter.flops

        self.operators, self.call, self.reference = ("aten.histogram",), call, histogram
        self.check = lambda value: (_close(value[0], call().hist), _close(value[1], call().bin_edges))

    def _histogramdd(self) -> None:
        samples, width = self.rng.randint(2, 12), self.rng.randint(1, 3)
        x = torch.rand(samples, width, generator=self.generator, dtype=torch.float64)
        bins = [self.rng.randint(1, 4) for _ in range(width)]
        ranged, wants_density = self.rng.random() < 0.5, self.rng.random() < 0.5
        bounds = [(-0.5, 1.5)] * width
        flat_range = [v for pair in bounds for v in pair] if ranged else None
        call = lambda: torch.histogramdd(x, bins, range=flat_range, density=wants_density)  # noqa: E731

        def histogramdd() -> tuple[Tensor, int]:
            flops, limits = 0, bounds
            if not ranged:  # found twice: by _histogramdd_bin_edges and again inside the counting kernel
                (lo_t, hi_t), counter = elementary_count(lambda: (x.amin(0), x.amax(0)))
                flops = 2 * counter.flops
                limits = [(float(a), float(b)) for a, b in zip(lo_t, hi_t, strict=True)]
            index = torch.zeros(samples, dtype=torch.long)
            for d in range(width):
                index = index * bins[d] + bin_index(x[:, d], bins[d], *limits[d])
            edges = [torch.linspace(*limits[d], bins[d] + 1, dtype=torch.float64) for d in range(width)]

            def count() -> Tensor:
                hist = add_into(math.prod(bins), index, torch.ones(samples, dtype=torch.float64)).reshape(
                    bins
                )
                return density(hist, edges) if wants_density else hist

            hist, counter = elementary_count(count)
            return hist, flops + counter.flops

        self.operators = ("aten._histogramdd_bin_edges", "aten._histogramdd_from_bin_cts")
        self.call, self.reference = call, histogramdd
        self.check = lambda value: _close(value, call().hist)

    # vector products ----------------------------------------------------------------------------------
    def _dot(self) -> None:
        n = self.rng.randint(1, 6)
        a, b = self._tensor(n), self._tensor(n)
        function = getattr(torch, self.kind)
        self._set(
            (f"aten.{self.kind}",),
            lambda: function(a, b),
            lambda: torch.mm(a.unsqueeze(0), b.unsqueeze(1)).reshape(()),
            lambda: function(a, b),
        )

    _vdot = _dot

    def _mv(self) -> None:
        m, n = self.rng.randint(1, 5), self.rng.randint(1, 5)
        a, v = self._tensor(m, n), self._tensor(n)
        self._set(
            ("aten.mv",),
            lambda: torch.mv(a, v),
            lambda: torch.mm(a, v.unsqueeze(1)).squeeze(1),
            lambda: torch.mv(a, v),
        )


def _close(got: Any, expected: Any) -> None:
    if isinstance(expected, tuple | list):
        for g, e in zip(got, expected, strict=True):
            _close(g, e)
        return
    torch.testing.assert_close(got, expected, equal_nan=True)


@pytest.mark.parametrize(("seed", "rng"), cases("statistics_kernels"))
def test_statistics_kernels_count_their_algorithm(seed: int, rng: random.Random) -> None:
    case = Case(rng)
    value, expected = case.reference()
    case.check(value)
    counted = library_count(case.call)
    assert counted.status == "complete", counted.diagnostics
    got = sum(counted.operator(name) for name in case.operators)
    assert got == expected, (case.kind, counted.by_operator)


def test_foreach_powsum_counts_each_tensor_like_powsum() -> None:
    """``_foreach_powsum`` over two tensors of 6 and 4 elements: per tensor ``Σ|x|^ord`` reduced to one
    value. Order 2: a square per element and ``N − 1`` adds (11 + 7); order 3: ``abs`` and ``pow`` per
    element (17 + 11)."""
    if not hasattr(torch.ops.aten, "_foreach_powsum"):
        pytest.skip("no _foreach_powsum on this torch")
    tensors = [torch.randn(2, 3), torch.randn(4)]
    for order, expected in ((2, 18), (3, 28)):
        reference = sum(
            elementary_count(
                lambda t=t, order=order: torch.pow(torch.abs(t), order).sum() if order != 2 else (t * t).sum()
            )[1].flops
            for t in tensors
        )
        assert reference == expected
        counted = library_count(lambda order=order: torch.ops.aten._foreach_powsum(tensors, order))
        assert counted.operator("aten._foreach_powsum") == expected, counted.by_operator
