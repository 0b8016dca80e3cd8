#!/usr/bin/env python3
"""check-dbus-names.py XML PAGE: every method, property, signal and error name of the
interface XML appears in the man page source PAGE (scdoc), so that they cannot drift.

Methods, properties and signals come from the XML elements; error names from the XML's
documentation comment (they are not introspection data). A name counts as present when
the page has it as a whole word; an underscore is matched escaped or not (scdoc's \\_).
Exits 1 listing what is missing, 0 otherwise; it also fails when the XML yields nothing
to check, so that a broken parse cannot pass."""
import re
import sys
import xml.etree.ElementTree as ET


def main(xml_path, page_path):
    with open(xml_path, encoding="utf-8") as f:
        xml_text = f.read()
    root = ET.fromstring(xml_text)
    names = []
    for iface in root.iter("interface"):
        names.append(("interface", iface.get("name")))
        for kind in ("method", "property", "signal"):
            for el in iface.iter(kind):
                names.append((kind, el.get("name")))
                if kind in ("method", "signal"):
                    # Argument names too, so that a renamed argument is noticed.
                    for arg in el.iter("arg"):
                        names.append((kind + " argument", arg.get("name")))
    errors = sorted(set(re.findall(r"\b(org\.[A-Za-z0-9_.]+\.Error\.[A-Za-z0-9_]+)", xml_text)))
    names += [("error", e) for e in errors]
    kinds = {k for k, _ in names}
    for needed in ("interface", "method", "property", "signal", "error"):
        if needed not in kinds:
            print(f"{xml_path}: found no {needed}: the check itself is broken")
            return 1

    with open(page_path, encoding="utf-8") as f:
        page = f.read().replace("\\_", "_")
    missing = []
    for kind, name in names:
        if not re.search(r"(?<![\w.])" + re.escape(name) + r"(?![\w])", page):
            missing.append(f"{kind} {name}")
    if missing:
        print(f"{page_path} does not mention, from {xml_path}:")
        for m in missing:
            print("  " + m)
        return 1
    print(f"{page_path}: all {len(names)} names of {xml_path} are there")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
