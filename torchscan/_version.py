"""The installed version, read from package metadata when available."""

from importlib import metadata

try:
    __version__ = metadata.version("torchscan")
except metadata.PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.3.0.dev0"
