"""The one way the CLI reads a file it is given (inventory, profile,
results file): a size cap before anything is parsed, UTF-8 with the
offset of the first bad byte, and YAML whose aliases cannot expand past
a bound. Every refusal is one BadInput line naming the file.

Why each: `-i /dev/zero` grew to 22 GB before the OOM killer ended it; a
file of Latin-1 bytes ended in a traceback; a YAML alias bomb is a few
lines whose expansion is billions of nodes, which PyYAML builds as shared
references but every walk over the document (checks, messages) expands.
"""
from pathlib import Path

import yaml

from rfc2544.errors import BadInput

MAX_BYTES = 16 << 20        # far above any inventory, profile or results file
MAX_NODES = 1_000_000       # YAML nodes after alias expansion


def read_text(path, what, max_bytes=MAX_BYTES):
    """The file's text; BadInput naming the file when it is missing,
    unreadable, over `max_bytes` (read no further than that) or not UTF-8."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except FileNotFoundError:
        raise BadInput(f"{path}: no such {what}") from None
    except IsADirectoryError:
        raise BadInput(f"{path}: is a directory ({what} expected)") from None
    except OSError as exc:
        raise BadInput(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise BadInput(f"{path}: {what} larger than {max_bytes >> 20} MiB: refused unread")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path}: {what} is not UTF-8 text (byte 0x{data[exc.start]:02x} "
                       f"at offset {exc.start})") from None


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that refuses a document whose alias expansion exceeds
    MAX_NODES, counted on the composed graph before anything is built."""

    def get_single_data(self):
        node = self.get_single_node()
        if node is None:
            return None
        if _expanded_size(node) > MAX_NODES:
            raise _TooLarge()
        return self.construct_document(node)


class _TooLarge(Exception):
    pass


def _expanded_size(root):
    """Nodes of the document as a walk over it meets them, aliases counted
    each time (memoised per node, so a bomb costs its own size to count)."""
    sizes, entered, stack = {}, set(), [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes or (not children_done and id(node) in entered):
            continue        # counted, or a node that reaches itself (counted once)
        entered.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            sizes[id(node)] = 1
            continue
        children = ([n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode)
                    else list(node.value))
        if children_done:
            sizes[id(node)] = min(1 + sum(sizes.get(id(c), 0) for c in children), MAX_NODES + 1)
            continue
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in sizes)
    return sizes[id(root)]


def load_yaml(path, what, max_bytes=MAX_BYTES):
    """The parsed YAML document of `path` (None for an empty file)."""
    text = read_text(path, what, max_bytes)
    try:
        return yaml.load(text, Loader=_BoundedLoader)
    except _TooLarge:
        raise BadInput(f"{path}: {what}'s YAML aliases expand to more than {MAX_NODES:,} nodes: "
                       "refused") from None
    except yaml.YAMLError as exc:
        first = " ".join(str(exc).split())[:300]
        raise BadInput(f"{path}: not valid YAML: {first}") from None
    except RecursionError:
        raise BadInput(f"{path}: {what} nested too deeply") from None
