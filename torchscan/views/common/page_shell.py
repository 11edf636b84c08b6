"""The document shell every non-explorer page shares: doctype, CSP, title, skip link, ``main``.

A page is offline and self-contained: the Content-Security-Policy allows nothing external, inline
styles only, and at most one constant packaged script, allowed by its SHA-256 (render.md 3.8). The
title is plain text, escaped, and is both the ``<title>`` and the ``<h1>`` (views-3.md 5: ``title=``
is the page title for every kind). Never imports torch.
"""

from __future__ import annotations

import base64
import hashlib
from functools import cache
from importlib import resources

from torchscan.views.common.text import esc

STATIC_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
"""The policy of a page without script."""


@cache
def asset(name: str) -> str:
    """A packaged CSS/JS file of ``torchscan/views/assets`` as text."""
    return resources.files("torchscan.views").joinpath("assets", name).read_text(encoding="utf-8")


def script_csp(script: str) -> str:
    """A policy that allows exactly ``script`` (by hash) and nothing external."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (
        f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{digest}'; "
        "base-uri 'none'; form-action 'none'"
    )


def page(title: str, body: str, *, css: str = "", script: str | None = None, data: str = "") -> str:
    """A whole HTML document around ``body`` (already escaped markup).

    ``css`` is appended to the explorer stylesheet; ``script`` (a constant package asset, never
    report data) runs after ``main`` and is the only script the policy allows; ``data`` is an inert
    ``<script type="application/json">`` element the script reads (already escaped for a script
    element, see :func:`torchscan.views.common.text.script_json`).
    """
    policy = STATIC_CSP if script is None else script_csp(script)
    tail = "" if script is None else f"<script>{script}</script>"
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">'
        f"<title>{esc(title)}</title><style>{asset('explorer.css')}{css}</style></head><body>"
        f'<a class="skip" href="#main">Skip to the measurements</a><main id="main"><h1>{esc(title)}</h1>'
        f"{body}{data}</main>{tail}</body></html>\n"
    )
