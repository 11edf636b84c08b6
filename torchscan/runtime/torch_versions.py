"""Which torch releases TorchScan is tested on, and what a report says on any other (torch-versions.md 2).

The declared range (``torch>=2.13,<3``) admits releases newer than the newest tested one, so that a
user is never forced to downgrade a multi-gigabyte package; instead every report made on such a
release carries an ``info`` diagnostic ``untested_torch_version`` naming the installed and the newest
tested versions. The installed version is ``torch.__version__`` read when the report is made, as the
reports' ``context.torch_version`` reads it.
"""

from __future__ import annotations

import re

import torch

from torchscan.report.diagnostics import diagnostic
from torchscan.report.schema import Diagnostic

TESTED_TORCH_VERSIONS = ("2.13.0", "2.14.1", "2.15.0")
"""The torch releases CI runs the whole test suite on (``.ci/run``), oldest first."""

_RELEASE = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def release(version: str) -> tuple[int, int, int]:
    """``(major, minor, patch)`` of a torch version string: ``"2.15.0+cu132"`` -> ``(2, 15, 0)``.

    Local labels (``+cpu``) and pre-release suffixes (``.dev20261104``, ``a0``) are dropped: a nightly
    of 2.16 is a 2.16 release for this purpose. Raises ``ValueError`` for a string with no version.
    """
    match = _RELEASE.match(str(version))
    if match is None:
        raise ValueError(f"not a torch version: {version!r}")
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch or 0)


def installed_version() -> str:
    """``torch.__version__`` as a plain string, read now."""
    return str(torch.__version__)


def installed_release() -> str:
    """The installed torch as ``"major.minor.patch"`` (``"2.15.0"`` for ``2.15.0+cu132``)."""
    return ".".join(str(part) for part in release(installed_version()))


def is_tested(version: str | None = None) -> bool:
    """Whether ``version`` (default: the installed torch) is one of :data:`TESTED_TORCH_VERSIONS`."""
    found = release(installed_version() if version is None else version)
    return any(release(tested) == found for tested in TESTED_TORCH_VERSIONS)


def newer_than_tested(version: str | None = None) -> bool:
    """Whether ``version`` (default: the installed torch) is newer than the newest tested release."""
    found = release(installed_version() if version is None else version)
    return found > release(TESTED_TORCH_VERSIONS[-1])


def untested_torch_diagnostics(unverified_operators: list[str] | None = None) -> list[Diagnostic]:
    """``[untested_torch_version]`` (severity ``info``) when the installed torch is newer than the
    newest tested release, else ``[]``.

    ``unverified_operators`` names the operators that only an inherited FlopCounterMode formula the
    reference suite has not checked on this torch could count (each also has its own
    ``unverified_inherited_formula`` entry, and is left out of the totals). Informational: it never
    changes a status.
    """
    version = installed_version()
    if not newer_than_tested(version):
        return []
    message = (
        f"torch {version} is newer than the newest release TorchScan is tested on "
        f"({TESTED_TORCH_VERSIONS[-1]}); TorchScan's own formulas count as on the tested releases"
    )
    if unverified_operators:
        message += (
            "; these operators have only FlopCounterMode formulas not checked on this torch, left out "
            "of the totals: " + ", ".join(sorted(unverified_operators))
        )
    return [diagnostic("untested_torch_version", message + ".", metric="report", severity="info")]
