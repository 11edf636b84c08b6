"""Issue 23 item 6: model errors in one line with a hint, help with defaults and examples,
stderr output never glued to the status line, and the table footer in the command line's words."""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

import pytest

from torchscan.cli import main
from torchscan.cli.parser import build_parser

MODELS = textwrap.dedent(
    """
    import sys
    from torch import nn

    class Tokens(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 4)
            self.head = nn.Linear(4, 2)

        def forward(self, ids):
            return self.head(self.emb(ids))

    class NeedsWidth(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.lin = nn.Linear(width, width)

        def forward(self, x):
            return self.lin(x)

    class Noisy(nn.Module):
        def forward(self, x):
            print("careful: noisy model", file=sys.stderr)
            return x * 2

    tokens = Tokens()
    conv = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU())
    noisy = Noisy()
    """
)


@pytest.fixture
def models(tmp_path: Path) -> str:
    path = tmp_path / "error_models.py"
    path.write_text(MODELS)
    return str(path)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _one_line(status: int, err: str) -> str:
    assert status == 2, err
    # torch itself may log a line on first import (e.g. "No CUDA runtime is found"): not ours
    ours = [line for line in err.splitlines() if not line.startswith("W")]
    assert len(ours) == 1 and ours[0].startswith("torchscan: error: "), err
    assert "Traceback" not in err
    return ours[0]


@pytest.mark.parametrize("command", ["scan", "flops", "memory", "latency"])
def test_float_inputs_to_a_token_model_hint_dtype_int64(
    capsys: pytest.CaptureFixture[str], models: str, command: str
) -> None:
    err = _one_line(*_run(capsys, command, f"{models}:tokens", "--input-shape", "8")[::2])
    assert "raised on inputs of shape [1, 8]" in err and "'indices'" in err
    assert "hint: token ids are integers: add --dtype int64" in err
    assert "(at error_models.py:" in err  # where in the user's code it failed
    status, _out, err = _run(capsys, command, f"{models}:tokens", "--input-shape", "8", "--dtype", "int64")
    assert status == 0, err


def test_a_batch_dimension_given_twice_is_explained(capsys: pytest.CaptureFixture[str], models: str) -> None:
    status, _, err = _run(capsys, "scan", f"{models}:conv", "--input-shape", "1,3,8,8")
    err = _one_line(status, err)
    assert "inputs of shape [1, 1, 3, 8, 8]" in err
    assert "hint: the batch dimension is added" in err and "--input-shape 3,8,8" in err
    assert "--dtype int64" not in err  # a float model: that hint does not apply


def test_a_class_that_needs_arguments_is_explained(capsys: pytest.CaptureFixture[str], models: str) -> None:
    status, _, err = _run(capsys, "scan", f"{models}:NeedsWidth", "--input-shape", "4")
    err = _one_line(status, err)
    assert "building" in err and "(class)" in err and "missing 1 required positional argument" in err
    assert "a class needs --factory-kwargs" in err and "or an instance" in err
    argv = ["scan", f"{models}:NeedsWidth", "--input-shape", "4", "--factory-kwargs", '{"width": 4}']
    assert _run(capsys, *argv)[0] == 0


def test_traceback_option_prints_the_traceback_too(capsys: pytest.CaptureFixture[str], models: str) -> None:
    status, _, err = _run(capsys, "flops", f"{models}:tokens", "--input-shape", "8", "--traceback")
    assert status == 2
    assert "Traceback (most recent call last)" in err
    assert err.splitlines()[-1].startswith("torchscan: error: ")


def test_stderr_output_never_glues_onto_the_status_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, models: str
) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    status, _, err = _run(capsys, "scan", f"{models}:noisy", "--input-shape", "4")
    assert status == 0
    line = next(line for line in err.split("\n") if "careful: noisy model" in line)
    # The status line was erased ("\r" then clear-to-end) before the model's text was written.
    assert line.split("\r")[-1] == "\x1b[Kcareful: noisy model", repr(line)


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_option_has_help_and_every_command_two_examples() -> None:
    for name, command in _subcommands().items():
        for action in command._actions:
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"
        assert command.epilog is not None and command.epilog.startswith("examples:")
        assert command.epilog.count("\n  torchscan ") >= 2, name


def test_help_shows_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _run(capsys, "latency", "--help")
    assert status == 0
    text = " ".join(out[out.index("options:") :].split())
    for option, default in (("--warmup N", "5"), ("--min-run-time SECONDS", "0.2"), ("--min-repeats N", "5")):
        assert option in text
        after = text[text.index(option) :]
        assert f"(default: {default})" in after[: after.index("--", len(option))]
    assert "torchscan latency demo:cnn --work-units 32" in out  # the epilogue keeps its lines
    status, out, _ = _run(capsys, "scan", "--help")
    assert "(default: full)" in " ".join(out.split())
    status, out, _ = _run(capsys, "generate", "--help")
    text = " ".join(out[out.index("options:") :].split())
    for option, default in (("--device DEVICE", "where it is"), ("--json PATH", "none"), ("--timing", "off")):
        after = text[text.index(option) :]
        assert f"default: {default})" in after[: after.index("--", len(option))]


def test_scan_footer_uses_command_line_spellings(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = _run(capsys, "scan", "demo:transformer", "--max-depth", "1")
    assert status == 0, err
    text = " ".join(out.split())
    assert "--max-depth" in text and "shows every depth" in text
    assert "max_depth=" not in text and "fold=False" not in text
    assert out.splitlines()[4].startswith("TransformerEncoder ")  # the root by its class name


def test_generate_model_errors_are_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "gen_models.py"
    path.write_text(
        "from torch import nn\n"
        "class Gen(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.emb = nn.Embedding(5, 2)\n"
        "    def get_input_embeddings(self):\n"
        "        return self.emb\n"
        "    def generate(self, ids, **kwargs):\n"
        "        raise ValueError('no generation today')\n"
        "model = Gen()\n"
    )
    argv = ["generate", f"{path}:model", "--prompt-tokens", "3", "--new-tokens", "2"]
    status, _, err = _run(capsys, *argv)
    line = _one_line(status, err)
    assert "raised: ValueError: no generation today" in line and "hint" not in line.split("raised")[0]


def test_hints_apply_only_when_the_options_explain_the_error() -> None:
    from torchscan.cli.errors import call_hint

    floats = RuntimeError("expected scalar type Float but found Double")
    assert call_hint(floats, [(3, 8, 8)], None) == ""  # a dtype clash between floats: no int64 hint
    tokens = RuntimeError("Expected tensor for argument #1 'indices' to have one of ... Long, Int")
    assert "--dtype int64" in call_hint(tokens, [(8,)], None)
    assert call_hint(tokens, [(8,)], ["int32"]) == ""  # integer inputs were given already
    rank = RuntimeError("Expected 3D (unbatched) or 4D (batched) input to conv2d")
    assert "batch dimension is added" in call_hint(rank, [(1, 3, 8, 8)], None)
    assert call_hint(rank, [(3, 8, 8)], None) == ""  # no leading 1: not a doubled batch dimension
