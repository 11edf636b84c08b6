"""Operator-FLOPs convention amendments of real-models.md 2.1-2.3 and the acceptance examples of 3."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from torchscan import crawl_module
from torchscan.measure.flops import measure_flops

INDEXING = "Indexing and selection move data and are excluded from FLOPs."
RANDOM = "Random-number generation is excluded from FLOPs."
PROFILER = "Profiler bookkeeping is excluded from FLOPs."


def _total(report):
    return report["total"]["status"], report["total"]["known_value"]


# --- section 3 acceptance examples -------------------------------------------------------------------


def test_pow_of_three_counts_one_per_element():
    x = torch.ones(10)
    report = measure_flops(lambda: torch.pow(x, 3.0))
    assert report["total"]["status"] == "complete" and report["total"]["value"] == 10
    assert report["by_operator"] == {"aten.pow": 10}


def test_gather_alone_is_a_complete_zero_with_the_indexing_reason():
    x, index = torch.ones(10), torch.zeros(3, dtype=torch.long)
    report = measure_flops(lambda: torch.gather(x, 0, index))
    assert report["total"]["status"] == "complete" and report["total"]["value"] == 0
    assert report["ignored_operators"] == {"aten.gather": {"calls": 1, "reason": INDEXING}}


def test_random_values_are_free_but_applying_them_counts():
    x = torch.ones(4)
    report = measure_flops(lambda: torch.rand(4) * x)
    assert report["total"]["status"] == "complete" and report["total"]["value"] == 4  # mul 4
    assert report["ignored_operators"] == {"aten.rand": {"calls": 1, "reason": RANDOM}}


_LIB = torch.library.Library("torchscan_convention_test", "DEF")  # an operator without any formula
_LIB.define("mystery(Tensor x) -> Tensor")
_LIB.impl("mystery", lambda x: x * 1, "CompositeExplicitAutograd")


def test_custom_library_operator_without_formula_is_an_uncounted_gap():
    x = torch.ones(3)
    report = measure_flops(lambda: torch.ops.torchscan_convention_test.mystery(x))
    assert _total(report) == ("partial", 0)
    assert [(d["code"], d["operator"]) for d in report["diagnostics"]] == [
        ("uncounted_operator", "torchscan_convention_test.mystery")
    ]


# --- 2.1 ignored operators ----------------------------------------------------------------------------


def _indexing_workloads():
    x, idx = torch.arange(12.0).reshape(3, 4), torch.tensor([0, 2])
    return {
        "aten.index_select": lambda: x.index_select(0, idx),
        "aten.index": lambda: x[idx],
        "aten.take": lambda: x.take(idx),
        "aten.tril": lambda: x.tril(),
        "aten.triu": lambda: x.triu(),
        "aten.flip": lambda: x.flip(0),
        "aten.roll": lambda: x.roll(1, 0),
        "aten.repeat": lambda: x.repeat(2, 1),
        "aten.masked_select": lambda: x.masked_select(x > 3),
        "aten.nonzero": lambda: x.nonzero(),
        "aten.diagonal": lambda: x.diagonal(),
        "aten.slice_scatter": lambda: x.slice_scatter(x[:1], 0, 0, 1),
        "aten.select_scatter": lambda: x.select_scatter(x[0], 0, 0),
        # selection by order (Mixtral's router: topk; its expert grouping: sort)
        "aten.sort": lambda: x.sort(dim=-1),
        "aten.topk": lambda: x.topk(2, dim=-1),
    }


INDEXING_WORKLOADS = _indexing_workloads()


@pytest.mark.parametrize("name", INDEXING_WORKLOADS)
def test_indexing_and_selection_are_ignored(name):
    report = measure_flops(INDEXING_WORKLOADS[name])
    assert report["ignored_operators"][name]["reason"] == INDEXING
    assert name not in report["by_operator"]
    assert not [d for d in report["diagnostics"] if d["operator"] == name]


def test_random_generators_are_ignored():
    x = torch.ones(2, 3)
    report = measure_flops(lambda: (torch.randn(3), torch.randint(0, 5, (3,)), x.normal_(), x.uniform_()))
    assert report["total"]["status"] == "complete" and report["total"]["value"] == 0
    for name in ("aten.randn", "aten.randint", "aten.normal_", "aten.uniform_"):
        assert report["ignored_operators"][name]["reason"] == RANDOM


def test_position_formula_creation_is_ignored_like_arange():
    """linspace/logspace/eye/tril_indices/triu_indices create tensors from positions, as arange does."""
    report = measure_flops(
        lambda: (
            torch.linspace(0, 1, 5),
            torch.logspace(0, 1, 5),
            torch.eye(3),
            torch.tril_indices(3, 3),
            torch.triu_indices(3, 3),
        )
    )
    assert report["total"]["status"] == "complete" and report["total"]["value"] == 0
    for name in ("aten.linspace", "aten.logspace", "aten.eye", "aten.tril_indices", "aten.triu_indices"):
        assert report["ignored_operators"][name]["reason"] == "Tensor creation is excluded from FLOPs."


def test_profiler_bookkeeping_is_ignored():
    x = torch.ones(3)

    def workload():
        with torch.profiler.record_function("region"):
            return x.exp()

    report = measure_flops(workload)
    assert report["total"]["status"] == "complete" and report["total"]["value"] == 3  # exp 3
    names = [name for name in report["ignored_operators"] if name.startswith("profiler.")]
    assert names and all(report["ignored_operators"][n]["reason"] == PROFILER for n in names)


@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")  # deprecated, still dispatched
def test_plain_index_put_and_scatter_are_ignored_accumulation_counts():
    x, idx, values = torch.zeros(5), torch.tensor([1, 3]), torch.ones(2)
    plain = measure_flops(lambda: (x.clone().index_put_((idx,), values), x.clone().scatter_(0, idx, values)))
    assert plain["total"]["status"] == "complete" and plain["total"]["value"] == 0
    assert plain["ignored_operators"]["aten.index_put_"]["reason"] == INDEXING
    assert plain["ignored_operators"]["aten.scatter_"]["reason"] == INDEXING
    accumulated = measure_flops(
        lambda: (
            x.clone().index_put_((idx,), values, accumulate=True),  # 2 indexed positions: 2 adds
            x.clone().scatter_add_(0, idx, values),  # 2 index elements: 2 adds
            x.clone().scatter_(0, idx, values, reduce="add"),  # 2
            x.clone().scatter_reduce_(0, idx, values, "mean"),  # 2 combines + 5 divides
        )
    )
    assert accumulated["total"]["status"] == "complete"
    assert accumulated["by_operator"] == {
        "aten.index_put_": 2,
        "aten.scatter_": 2,
        "aten.scatter_add_": 2,
        "aten.scatter_reduce_": 7,
    }


# --- 2.2 counted ----------------------------------------------------------------------------------------


def _counted_cases():
    x, ints = torch.full((2, 3), 0.5), torch.ones(2, 3, dtype=torch.int64)
    return {
        "pow-tensor-exponent": (lambda: torch.pow(x, x), {"aten.pow": 6}),
        # float_power is composite: it reaches the observer as pow on float64 copies
        "float_power": (lambda: torch.float_power(x, 3), {"aten.pow": 6}),
        "float_power-int": (lambda: torch.float_power(ints, 2), {"aten.pow": 6}),  # float64 result
        "sigmoid-int": (lambda: ints.sigmoid(), {"aten.sigmoid": 24}),  # floating result: 4·6
        "tanh-int": (lambda: ints.tanh(), {"aten.tanh": 36}),  # 6·6
        "rsub": (lambda: torch.rsub(x, 1.0), {"aten.rsub": 6}),
        "rsub-alpha": (lambda: torch.rsub(x, x, alpha=2), {"aten.rsub": 12}),  # 6·(1 + 1)
        "rounding": (
            lambda: (x.ceil(), x.floor(), x.round(), x.trunc(), x.frac(), x.sign(), x.sgn()),
            {f"aten.{n}": 6 for n in ("ceil", "floor", "round", "trunc", "frac", "sign", "sgn")},
        ),
        "ceil-int": (lambda: ints.ceil(), {}),  # integer result: 0 (ceil of an int is a copy)
        "lerp": (lambda: torch.lerp(x, x, 0.25), {"aten.lerp": 18}),  # 3·6
        "lerp-tensor-weight": (lambda: torch.lerp(x, x, x), {"aten.lerp": 18}),
        "pointwise-fallback-atan": (lambda: x.atan(), {"aten.atan": 6}),
        "pointwise-fallback-int-result": (lambda: torch.bitwise_and(ints, ints), {"aten.bitwise_and": 0}),
        "pointwise-fallback-bool-result": (lambda: x.isnan(), {}),
    }


COUNTED = _counted_cases()


@pytest.mark.parametrize("case", COUNTED)
def test_counted_rows(case):
    workload, expected = COUNTED[case]
    report = measure_flops(workload)
    assert report["total"]["status"] == "complete"
    counted = {name: flops for name, flops in report["by_operator"].items() if name in expected}
    assert counted == expected
    assert report["total"]["value"] == sum(expected.values())


def test_in_place_metadata_ops_and_arg_extrema():
    x = torch.arange(6.0).reshape(2, 3)
    report = measure_flops(lambda: (x.clone().as_strided_((3, 2), (2, 1)), x.argmax(), x.argmin(dim=1)))
    assert report["total"]["status"] == "complete"
    assert report["ignored_operators"]["aten.as_strided_"]["reason"] == "Metadata-only tensor view."
    # argmax over 6 values: 5 comparisons; argmin along rows of 3 into 2 outputs: 6 − 2 = 4
    assert report["by_operator"] == {"aten.argmax": 5, "aten.argmin": 4}


def test_mixtral_routing_operators():
    # Mixtral's experts: histc of 12 float expert ids into 4 bins (one increment per input element:
    # 12), floor_divide of int64 positions (integer result: 0), sort and topk (selection: ignored).
    ids, positions = torch.tensor([0.0, 1, 1, 3] * 3), torch.arange(12)
    report = measure_flops(
        lambda: (torch.histc(ids, bins=4, min=0, max=3), positions // 2, ids.sort(), ids.topk(2))
    )
    assert _total(report) == ("complete", 12)
    assert report["by_operator"] == {"aten.floor_divide": 0, "aten.histc": 12}
    for name in ("aten.sort", "aten.topk"):
        assert report["ignored_operators"][name]["reason"] == INDEXING


def test_floating_floor_divide_is_rounded_division():
    # truth.md 3 (superseding B.7.3): floor_divide rounds as div(rounding_mode="floor") does, a
    # divide and a floor per output element on a floating result: 2·3 = 6, complete.
    x = torch.full((3,), 7.0)
    report = measure_flops(lambda: torch.floor_divide(x, 2.0))
    assert _total(report) == ("complete", 6)
    assert report["by_operator"] == {"aten.floor_divide": 6} and report["diagnostics"] == []


def test_integer_add_still_counts_zero():
    ints = torch.ones(3, dtype=torch.int64)
    report = measure_flops(lambda: ints + 1)
    assert report["total"]["status"] == "complete" and report["by_operator"] == {"aten.add": 0}


def test_comparisons_of_floats_keep_their_rows():
    x = torch.ones(4)
    report = measure_flops(lambda: x == x)
    assert report["by_operator"] == {"aten.eq": 4}  # boolean result, floating inputs


# --- caller formulas out of range -----------------------------------------------------------------------


def test_caller_formula_beyond_float_range_is_unsupported_not_a_crash():
    x = torch.ones(3)
    report = measure_flops(lambda: x.sin(), custom_mapping={torch.ops.aten.sin: lambda *a, **k: 10**400})
    assert _total(report) == ("partial", 0)
    [entry] = report["diagnostics"]
    assert entry["code"] == "unsupported_operator_formula" and entry["operator"] == "aten.sin"
    assert "aten.sin" in entry["message"]
    crawled = crawl_module(
        nn.Sequential(nn.ReLU()), (3,), custom_mapping={torch.ops.aten.relu: lambda *a, **k: 10**400}
    )
    assert crawled["totals"]["operator_flops"]["status"] == "partial"


# --- 2.3 inference mode ---------------------------------------------------------------------------------


def _flops(run, context):
    with context():
        return run()


def _same_under_both_modes(model, inputs):
    model.eval()
    reports = [
        _flops(lambda: measure_flops(lambda: model(*inputs)), ctx)
        for ctx in (torch.no_grad, torch.inference_mode)
    ]
    graded, inference = reports
    assert graded["total"] == inference["total"]
    assert graded["by_operator"] == inference["by_operator"]
    assert graded["total"]["status"] == "complete"
    crawls = [
        _flops(lambda: crawl_module(model, args=inputs), ctx) for ctx in (torch.no_grad, torch.inference_mode)
    ]
    per_layer = [
        [(layer["name"], layer["metrics"]["operator_flops_self"]) for layer in crawl["layers"]]
        for crawl in crawls
    ]
    assert per_layer[0] == per_layer[1]
    assert crawls[0]["totals"]["operator_flops"] == crawls[1]["totals"]["operator_flops"]
    return graded


def test_inference_mode_matches_no_grad_on_a_cnn():
    model = nn.Sequential(
        nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 2)
    )
    report = _same_under_both_modes(model, (torch.ones(1, 3, 8, 8),))
    # conv 2·1·36·(4·3·3·3) = 7776; BN eval 2N + 2C + A·N = 288 + 8 + 288 = 584 (N = 144, C = 4, A = 2)
    assert report["by_operator"]["aten.convolution"] == 7776
    # BatchNorm's own kernel, aten.native_batch_norm, is counted: its Python decomposition into
    # _native_batch_norm_legit_no_training is not what PyTorch runs (families.md 1 step 5)
    assert report["by_operator"]["aten.native_batch_norm"] == 584
    assert report["by_operator"]["aten.addmm"] == 2 * 144 * 2  # 576


def test_inference_mode_decomposes_composites_into_their_parts():
    linear = nn.Linear(3, 2)
    with torch.inference_mode():
        report = measure_flops(lambda: linear(torch.ones(4, 3)))
    assert report["total"]["status"] == "complete"
    assert report["by_operator"] == {"aten.addmm": 2 * 4 * 3 * 2}  # 48, not an uncounted aten.linear
    assert "aten.linear" not in report["ignored_operators"]


def _transformers():
    return pytest.importorskip("transformers")


@pytest.mark.parametrize("family", ["bert", "gpt2", "llama"])
def test_inference_mode_matches_no_grad_on_tiny_transformers(family):
    transformers = _transformers()
    torch.manual_seed(0)
    if family == "bert":
        config = transformers.BertConfig(
            vocab_size=32, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32
        )
        model = transformers.BertModel(config)
    elif family == "gpt2":
        config = transformers.GPT2Config(vocab_size=32, n_embd=16, n_layer=1, n_head=2, n_positions=16)
        model = transformers.GPT2Model(config)
    else:
        config = transformers.LlamaConfig(
            vocab_size=32,
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
            max_position_embeddings=16,
        )
        model = transformers.LlamaModel(config)
    ids = torch.arange(8).reshape(1, 8) % 32
    model.eval()
    reports = [
        _flops(lambda: measure_flops(lambda: model(ids)), ctx)
        for ctx in (torch.no_grad, torch.inference_mode)
    ]
    assert reports[0]["total"] == reports[1]["total"]
    assert reports[0]["by_operator"] == reports[1]["by_operator"]
    assert reports[0]["total"]["status"] == "complete", reports[0]["diagnostics"]


def test_inference_mode_matches_no_grad_on_resnet18():
    models = pytest.importorskip("torchvision.models")
    model = models.resnet18(weights=None)
    report = _same_under_both_modes(model, (torch.ones(1, 3, 224, 224),))
    # the no_grad figure measured on main (3,642,782,592) less the stem max pool's padding taps
    # (truth.md §6): MaxPool2d(3, 2, 1) on 112×112 → 56×56 reads 2 + 55·3 = 167 taps per axis, not
    # 56·3 = 168, so 168² − 167² = 335 comparisons fewer per channel, 64 channels: 21,440
    assert report["total"]["value"] == 3_642_782_592 - 21_440
