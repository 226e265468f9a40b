#!/usr/bin/env python3
"""The slowest tests of a `make test` run, from the xUnit files `swift test --xunit-output` wrote.

Usage: slowest-tests.py DIRECTORY [COUNT]
"""
import glob
import os
import sys
import xml.etree.ElementTree as ElementTree


def main() -> None:
    directory = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    cases = []
    for path in sorted(glob.glob(os.path.join(directory, "*.xml"))):
        suite = os.path.basename(path).split(".")[0]
        try:
            tree = ElementTree.parse(path)
        except (ElementTree.ParseError, OSError) as error:
            print(f"  (unreadable {path}: {error})")
            continue
        for case in tree.iter("testcase"):
            try:
                seconds = float(case.get("time", "0"))
            except ValueError:
                continue
            name = f"{case.get('classname', '')}.{case.get('name', '')}".strip(".")
            cases.append((seconds, suite, name))
    if not cases:
        print("  (no test results recorded)")
        return
    cases.sort(reverse=True)
    print(f"the {min(count, len(cases))} slowest of {len(cases)} tests:")
    for seconds, suite, name in cases[:count]:
        print(f"  {seconds:7.1f} s  {suite}: {name[:150]}")


if __name__ == "__main__":
    main()
