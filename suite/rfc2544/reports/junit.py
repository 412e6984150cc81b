"""The comparison as JUnit XML, so a CI pipeline shows each gated figure as a test."""
import xml.etree.ElementTree as ET
from pathlib import Path

from rfc2544.errors import BadInput
from rfc2544.reports.compare import format_value


def junit_tree(result, old_path, new_path):
    suite = ET.Element("testsuite", name="rfc2544.compare")
    props = ET.SubElement(suite, "properties")
    for name, value in (("old", old_path), ("new", new_path), ("max_regression_pct", f"{result['threshold_pct']:g}")):
        ET.SubElement(props, "property", name=name, value=str(value))
    failures = skipped = tests = 0
    for r in result["rows"]:
        if not r["gated"]:
            continue
        tests += 1
        case = ET.SubElement(suite, "testcase", classname=f"rfc2544.compare.{r['metric'].split(' (')[0].replace(' ', '_')}",
                             name=f"{r['metric']} at {r['label']}", time="0")
        detail = (f"OLD {format_value(r, r['old'])}, NEW {format_value(r, r['new'])}"
                  + ("" if r["change_pct"] is None else f", change {r['change_pct']:+.2f} %"))
        if r["status"] == "regression":
            failures += 1
            ET.SubElement(case, "failure", message=f"regressed past {result['threshold_pct']:g} %: {detail}",
                          type="regression").text = detail
        elif r["status"] == "missing":
            failures += 1
            ET.SubElement(case, "failure", message="measured in OLD, not in NEW", type="missing").text = detail
        elif r["status"] == "new":
            skipped += 1
            ET.SubElement(case, "skipped", message="not measured in OLD: nothing to compare with")
        else:
            ET.SubElement(case, "system-out").text = detail
    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", str(skipped))
    root = ET.Element("testsuites", tests=str(tests), failures=str(failures), errors="0")
    root.append(suite)
    return ET.ElementTree(root)


def write_junit(result, old_path, new_path, target):
    return write_tree(junit_tree(result, old_path, new_path), target)


def write_tree(tree, target):
    """A JUnit XML tree to `target` (--junit); BadInput when it cannot be written."""
    ET.indent(tree)
    target = Path(target)
    try:
        tree.write(target, encoding="utf-8", xml_declaration=True)
    except OSError as exc:
        raise BadInput(f"--junit {target}: cannot write: {exc.strerror or exc}") from None
    return target
