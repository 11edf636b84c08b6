"""Errors of the user's model as one line with a hint (issue 23 item 6).

A model scanned with the wrong options — float inputs for a token model, a batch dimension given
twice, a class whose constructor needs arguments — used to print a long traceback from inside the
model. Here the error becomes one line, exit status 2 (the options were wrong, not TorchScan), with
the exception type and message, where in the user's code it was raised, and a hint when the options
explain it. ``--traceback`` prints the full traceback as well. Nothing here imports torch.
"""

from __future__ import annotations

import contextlib
import re
import sys
import traceback
from collections.abc import Iterator, Sequence
from pathlib import Path

from torchscan.cli.targets import UsageError

# Exceptions that say "these integers were expected": an embedding or index lookup fed floats.
_INTEGER_WORDS = re.compile(
    r"'indices'|\bindices\b|\bLong\b|\bInt\b|integer|embedding|one_hot", re.IGNORECASE
)
# Exceptions that say "this rank was not expected": usually a batch dimension given twice.
_RANK_WORDS = re.compile(
    r"\bD\b|dimension|dim|rank|size|shape|batched|expected .*input|too many|unpack", re.IGNORECASE
)
_MAX_MESSAGE = 300


class ModelCallError(UsageError):
    """The user's factory or model raised: reported as one line with a hint, exit status 2."""


def _where(error: BaseException) -> str | None:
    """``file.py:12 in forward``: the innermost frame of the user's code, outside torch and TorchScan."""
    frames = traceback.extract_tb(error.__traceback__)
    library = ("/torch/", "/torchscan/", "/torchvision/", "<frozen")
    for frame in reversed(frames):
        name = frame.filename.replace("\\", "/")
        if not any(part in name for part in library):
            return f"{Path(frame.filename).name}:{frame.lineno} in {frame.name}"
    return None


def _message(error: BaseException) -> str:
    text = " ".join(str(error).split())
    if len(text) > _MAX_MESSAGE:
        text = text[: _MAX_MESSAGE - 1] + "…"
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def call_hint(error: BaseException, shapes: Sequence[Sequence[int]], dtypes: Sequence[str] | None) -> str:
    """The hint for an exception the model raised on the generated inputs ('' when none applies).

    ``shapes`` are the ``--input-shape`` values (without the batch dimension), ``dtypes`` the
    ``--dtype`` names given (None: the model's own floating dtype was used).
    """
    text = str(error)
    hints = []
    floating = dtypes is None or any(
        name.removeprefix("torch.").startswith(("float", "bfloat")) for name in dtypes
    )
    if floating and _INTEGER_WORDS.search(text):
        hints.append(
            "token ids are integers: add --dtype int64 (inputs are floats unless --dtype says otherwise)"
        )
    if any(shape and shape[0] == 1 for shape in shapes) and _RANK_WORDS.search(text):
        example = ",".join(str(size) for size in next(s for s in shapes if s and s[0] == 1)[1:]) or "..."
        hints.append(
            "the batch dimension is added: --input-shape takes the shape of one sample "
            f"(--input-shape {example} makes a batch of 1)"
        )
    return "; ".join(hints)


def _described(error: BaseException, head: str, show_traceback: bool) -> str:
    """``head: message (at user frame)``, the full traceback first on stderr when asked for."""
    if show_traceback:
        traceback.print_exc(file=sys.stderr)
    where = _where(error)
    line = f"{head}: {_message(error)}"
    return f"{line} (at {where})" if where else line


@contextlib.contextmanager
def model_call(
    target: str,
    shapes: Sequence[Sequence[int]],
    dtypes: Sequence[str] | None,
    show_traceback: bool = False,
) -> Iterator[None]:
    """Turn an exception of the model (not a usage error) into a one-line :class:`ModelCallError`."""
    try:
        yield
    except (UsageError, KeyboardInterrupt):
        raise
    except Exception as error:
        hint = call_hint(error, shapes, dtypes)
        shown = ", ".join("[" + ", ".join(str(size) for size in (1, *shape)) + "]" for shape in shapes)
        head = f"{target} raised" + (f" on inputs of shape {shown}" if shapes else "")
        line = _described(error, head, show_traceback)
        line += f"; hint: {hint}" if hint else "; --traceback shows where"
        raise ModelCallError(line) from None


def factory_hint(obj: object) -> str:
    """The hint for a factory or class that failed to build the model."""
    if isinstance(obj, type):
        return (
            "a class needs --factory-kwargs (its constructor's arguments as JSON) or an instance: "
            "point TARGET at a module-level instance or a function that builds one"
        )
    return "check --factory-kwargs against the factory's parameters; --traceback shows where it failed"


@contextlib.contextmanager
def model_build(target: str, obj: object, show_traceback: bool = False) -> Iterator[None]:
    """Turn an exception of the factory (or class) into a one-line :class:`ModelCallError`."""
    try:
        yield
    except (UsageError, KeyboardInterrupt):
        raise
    except Exception as error:
        kind = "class" if isinstance(obj, type) else "factory"
        line = _described(error, f"building {target} failed ({kind})", show_traceback)
        raise ModelCallError(f"{line}; hint: {factory_hint(obj)}") from None
