"""Yuxi Memory. The version is written once, in pyproject.toml, and read here from the installed
package's metadata (``yuxi --version``, ``/healthz`` and the OpenAPI document show it)."""

from importlib.metadata import version

__version__ = version("yuxi")

__all__ = ["__version__"]
