"""The commands' -i INVENTORY: the file given, or the local lab's.

Here, not in config/: the fallback knows the lab, and config is below it."""
from pathlib import Path

from rfc2544.config import inventory
from rfc2544.errors import BadInput


def resolve(path):
    """-i INVENTORY loaded, or the default lab's when none is given."""
    if path:
        return inventory.load(path)
    try:
        from rfc2544.lab import Lab
    except ImportError:
        raise BadInput("no inventory given (-i) and the lab is not part of this build")
    lab_inventory = Path(Lab("default").inventory_path)
    if not lab_inventory.exists():
        raise BadInput("no inventory given (-i) and the local lab is not up: run 'rfc2544 lab up' or pass -i")
    return inventory.load(lab_inventory)
