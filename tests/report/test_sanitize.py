"""The sanitizer removes URLs with credentials, angle-bracket reprs, addresses, paths (issue #20, item 4)."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from torchscan.report.diagnostics import MAX_ERROR_TEXT, sanitize_text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("see http://user:hunter2@example.com/x now", "see <url> now"),
        ("https://u:p@h:8080", "<url>"),
        ("ftp://alice:secret@ftp.example.org", "<url>"),
        ("file:///tmp/x.json", "<url>"),
        ("login alice:s3cret@db.internal failed", "login <url> failed"),
        ("<module 'x' from '/tmp/x.py'>", "<module>"),
        ("<function <lambda> at 0x7f0123456789>", "<function>"),
        ("<built-in function len>", "<built-in_function>"),
        ("<bound method A.f of <__main__.A object at 0x7f0123456789>>", "<bound_method>"),
        ("expected <class 'torch.nn.modules.linear.Linear'>", "expected class Linear"),
        ("2024/notes and 1/2", "<path> and 1/2"),
        ("f.<locals>.Net", "f.<locals>.Net"),
        ("x < 3 and y > 2", "x < 3 and y > 2"),
    ],
)
def test_sanitize_known_leaks(text: str, expected: str) -> None:
    assert sanitize_text(text) == expected


def test_bound_method_repr_of_a_module_goes_as_a_whole() -> None:
    text = sanitize_text(f"got {nn.Linear(2, 3).forward}")
    assert text == "got <bound_method>"  # not "in_features=2" nor the class repr


# --- property tests ------------------------------------------------------------------------
# A type name is kept on purpose (``<Linear>``), so secrets never sit in one. Secrets are drawn
# from letters the filler never produces, so "the secret is gone" is exact.
_SECRET = st.text("QZXJ", min_size=4, max_size=12).map(lambda s: "Q" + s)
_FILLER = st.text(st.characters(blacklist_characters="QZXJ", codec="utf-8"), max_size=30)


def _leaks(secret: str) -> st.SearchStrategy[str]:
    address = "0x7f" + "".join(f"{ord(c):x}" for c in secret)[:10]
    return st.sampled_from(
        [
            f"/home/{secret}/model.py",
            f"C:\\Users\\{secret}\\x",
            f"~/{secret}",
            f"../{secret}/y",
            f"pkg/{secret}.py",
            f"http://user:{secret}@host/path",
            f"git+ssh://{secret}@example.org/repo",
            f"{secret}:pw@host",
            f"user:{secret}@host",
            f"<module '{secret}' from '/x/{secret}.py'>",
            f"<function {secret}.<locals>.<lambda> at {address}>",
            f"<bound method Linear.forward of Linear(in_features={secret})>",
            f"<pkg.Mod object at {address}> {secret}/x",
            f"<built-in method {secret} of list object at {address}>",
            f"tensor([[{secret}]])",
        ]
    )


_REPR_LIKE = re.compile(r"<[A-Za-z_][^<>]*[\s'\"=(.:/\\][^<>]*>")
_ADDRESS_LIKE = re.compile(r"0x[0-9a-fA-F]{6,}")
_PATH_LIKE = re.compile(r"(?<![\w.])[\\/][\w.]|[A-Za-z]:[\\/]|~[\\/]|\.[\\/]|[A-Za-z][\w.-]*[\\/][\w.-]")


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_no_secret_path_address_or_repr_survives(data: st.DataObject) -> None:
    secret = data.draw(_SECRET)
    parts = data.draw(st.lists(st.one_of(_FILLER, _leaks(secret)), min_size=1, max_size=6))
    text = sanitize_text(" ".join(parts))
    assert secret not in text
    assert "://" not in text
    assert not _ADDRESS_LIKE.search(text)
    assert not _PATH_LIKE.search(text), text
    assert not _REPR_LIKE.search(text), text
    assert len(text) <= MAX_ERROR_TEXT
    assert all(ord(c) >= 0x20 and not 0x7F <= ord(c) < 0xA0 for c in text)
    assert sanitize_text(text) == text  # a fixpoint: sanitizing twice changes nothing


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text_is_bounded_clean_and_idempotent(raw: str) -> None:
    text = sanitize_text(raw)
    assert len(text) <= MAX_ERROR_TEXT
    assert not _ADDRESS_LIKE.search(text) and "://" not in text
    assert not _REPR_LIKE.search(text), text
    assert sanitize_text(text) == text


@pytest.mark.parametrize("unit", ["<a", "<a<", "a/", "tensor(", "http://", "x:y@"])
def test_pathological_input_stays_fast(unit: str) -> None:
    start = time.perf_counter()
    sanitize_text(unit * 10_000)
    assert time.perf_counter() - start < 1.0
