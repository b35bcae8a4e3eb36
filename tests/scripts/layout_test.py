#!/usr/bin/env python3
"""scripts/layout.py against small trees made here: it finds a loop inside a
folder, a loop between sibling folders, a long function and a long file,
and --check passes a tree that has none. Then --check on this checkout."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LAYOUT = os.path.join(ROOT, "scripts", "layout.py")


def write(root, path, text):
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as f:
        f.write(text)


def run(root, *args):
    return subprocess.run([sys.executable, LAYOUT, "--root", root, *args],
                          capture_output=True, text=True)


def function(name, lines):
    body = "".join(f"  x += {i};\n" for i in range(lines))
    return f"int {name}(int x) {{\n{body}  return x;\n}}\n"


class LayoutTest(unittest.TestCase):
    def tree(self, files):
        root = tempfile.mkdtemp()
        for path, text in files.items():
            write(root, path, text)
        return root

    def test_a_clean_tree_passes(self):
        root = self.tree({
            "lib/a/x.h": "#pragma once\n",
            "lib/a/y.h": '#include "lib/a/x.h"\n',
            "lib/a/y.cc": '#include "lib/a/y.h"\n' + function("F", 10),
        })
        result = run(root, "--check")
        self.assertEqual(result.returncode, 0, result.stdout)
        self.assertIn("functions over 120 lines: 0", result.stdout)

    def test_a_loop_through_a_source_file_is_found(self):
        # y.h includes x.h; x.cc includes y.h: x and y include each other.
        root = self.tree({
            "lib/a/x.h": "#pragma once\n",
            "lib/a/x.cc": '#include "lib/a/x.h"\n#include "lib/a/y.h"\n',
            "lib/a/y.h": '#include "lib/a/x.h"\n',
        })
        result = run(root, "--check")
        self.assertEqual(result.returncode, 1)
        self.assertIn("loop in lib/a: x y", result.stdout)
        self.assertIn("back arrow in lib/a:", result.stdout)

    def test_sibling_folders_that_include_each_other_are_a_loop(self):
        root = self.tree({
            "lib/a/p/x.h": '#include "lib/a/q/y.h"\n',
            "lib/a/q/y.h": "#pragma once\n",
            "lib/a/q/y.cc": '#include "lib/a/p/x.h"\n',
        })
        result = run(root, "--check")
        self.assertEqual(result.returncode, 1)
        self.assertIn("loop in lib/a/*: p q", result.stdout)

    def test_long_functions_and_files_are_named(self):
        long_file = "".join(f"// {i}\n" for i in range(601))
        root = self.tree({
            "cmd/run.cc": function("Short", 100) + function("Long", 130),
            "lib/a/big.h": long_file,
        })
        result = run(root, "--check")
        self.assertEqual(result.returncode, 1)
        self.assertIn("functions over 120 lines: 1", result.stdout)
        self.assertRegex(result.stdout, r"\d+ cmd/run.cc:\d+ Long")
        self.assertNotIn("Short", result.stdout)
        self.assertIn("601 lib/a/big.h", result.stdout)

    def test_this_checkout_has_no_loop_and_nothing_over_its_limit(self):
        result = run(ROOT, "--check")
        self.assertEqual(result.returncode, 0, result.stdout)


if __name__ == "__main__":
    unittest.main()
