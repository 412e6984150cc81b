"""Where the lab keeps its files: image cache and per-lab state."""
import os
from importlib import resources
from pathlib import Path


def cache_root() -> Path:
    # RFC2544_CACHE lets tests and CI point the cache elsewhere.
    base = os.environ.get("RFC2544_CACHE")
    if base:
        return Path(base).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "rfc2544"


def images_dir() -> Path:
    return cache_root() / "images"


def labs_dir() -> Path:
    return cache_root() / "labs"


GUEST_DIR = Path(str(resources.files("rfc2544.lab") / "guest"))
