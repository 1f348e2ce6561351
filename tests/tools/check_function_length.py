#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""No function in tools/ is longer than 80 lines (issue 24: the command-line layer's mains and
parsers were the longest functions of the tree). A function is counted from its signature's
first line to its closing brace at column 0 (the project's style, .clang-format).
Usage: check_function_length.py SOURCE_DIR [LIMIT]   (exit 0: all within; 1: the longer ones)"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
limit = int(sys.argv[2]) if len(sys.argv) > 2 else 80
# a definition's first line: a type and a name at column 0, up to its '(' (no ';' on it)
start = re.compile(r"^[A-Za-z_][\w \t\*]*\b(\w+)\s*\(")
long_ones = []
for path in sorted((root / "tools").rglob("*.c")):
    lines = path.read_text().split("\n")
    i = 0
    while i < len(lines):
        m = start.match(lines[i])
        if m and not lines[i].rstrip().endswith(";") and not lines[i].startswith(("#", "static const", "const")):
            j = i
            while j < len(lines) and lines[j] != "{" and not lines[j].rstrip().endswith(";"):
                j += 1
            if j < len(lines) and lines[j] == "{":
                k = j
                while k < len(lines) and lines[k] != "}":
                    k += 1
                n = k - i + 1
                if n > limit:
                    long_ones.append("%s:%d: %s(): %d lines" % (path.relative_to(root), i + 1, m.group(1), n))
                i = k
        i += 1
for s in long_ones:
    print(s)
print("function length: %d over %d lines in tools/" % (len(long_ones), limit))
sys.exit(1 if long_ones else 0)
