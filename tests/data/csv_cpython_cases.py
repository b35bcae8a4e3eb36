#!/usr/bin/env python3
"""Writes random RFC 4180 CSV files and what Python's csv module reads in them.

Usage: csv_cpython_cases.py OUT_DIR CASES

For case i (its random generator seeded with i) it writes:
  OUT_DIR/case_<i>.csv       the file, UTF-8, a random delimiter among
                             , ; TAB |, LF or CR LF line ends, quoted fields
                             holding delimiters, quotes, CR, LF and CR LF,
                             empty cells, multi-byte characters, spaces kept
                             around unquoted fields, some blank lines, a
                             UTF-8 byte-order mark in some files
  OUT_DIR/case_<i>.expected  line 1: the delimiter as two hex digits; then
                             one line per record csv.reader returns (blank
                             lines, which it returns as [], are left out),
                             its cells as the hex of their UTF-8 bytes
                             joined by ','
The expected cells are what csv.reader (strict=True) reads back from the
file, not what the generator meant to write; the script fails if the two
differ, so a generator bug cannot pass for a reader bug.

Standard library only.
"""

import csv
import os
import random
import sys

DELIMITERS = [",", ";", "\t", "|"]
PLAIN = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:/+"
# Two-, three- and four-byte UTF-8 characters.
UNICODE = ["é", "ß", "Ж", "ש", "中", "文", "€", "ह", "😀", "𝄞", "\u00a0", "ﬁ"]


def random_text(rng, delimiter, quoted):
    """One cell's text; when `quoted` it may hold anything."""
    pieces = []
    for _ in range(rng.randint(1, 8)):
        r = rng.random()
        if r < 0.45:
            pieces.append("".join(rng.choice(PLAIN) for _ in range(rng.randint(1, 6))))
        elif r < 0.65:
            pieces.append(rng.choice(UNICODE))
        elif r < 0.75:
            pieces.append(rng.choice([" ", "  ", "\t"]) if delimiter != "\t" else " ")
        elif quoted:
            pieces.append(rng.choice([delimiter, '"', '""', "\r", "\n", "\r\n",
                                      "\n\n", "\r\r\n", "\n\r", ",", ";", "|",
                                      "\t"]))
        else:
            # Other delimiters are plain data in an unquoted field.
            others = [d for d in DELIMITERS if d != delimiter]
            pieces.append(rng.choice(others))
    text = "".join(pieces)
    if not quoted:
        # A quote or line break outside quotes is malformed; a space next to
        # a quote would read as data in Python and as an error in dtf.
        assert not any(c in text for c in '"\r\n' + delimiter)
    return text


def needs_quotes(text, delimiter):
    return any(c in text for c in (delimiter, '"', "\r", "\n"))


def make_case(index):
    rng = random.Random(index)
    delimiter = DELIMITERS[index % len(DELIMITERS)]
    eol = rng.choice(["\n", "\r\n"])
    columns = rng.randint(1, 7)
    rows = rng.randint(1, 90)
    cells = []
    lines = []
    for _ in range(rows):
        row = []
        fields = []
        for _ in range(columns):
            r = rng.random()
            if r < 0.15:
                text = ""
            elif r < 0.55:
                text = random_text(rng, delimiter, quoted=True)
            else:
                text = random_text(rng, delimiter, quoted=False)
            quote = needs_quotes(text, delimiter) or rng.random() < 0.2
            # One empty unquoted cell alone on its line is a blank line.
            if columns == 1 and text == "":
                quote = True
            row.append(text)
            fields.append('"' + text.replace('"', '""') + '"' if quote else text)
        cells.append(row)
        lines.append(delimiter.join(fields))
        if rng.random() < 0.05:
            lines.append("")  # a blank line, skipped by both readers
    body = eol.join(lines)
    if rng.random() < 0.8:
        body += eol
    bom = "\ufeff" if rng.random() < 0.15 else ""
    return delimiter, bom + body, cells


def main():
    out_dir, count = sys.argv[1], int(sys.argv[2])
    total = 0
    for index in range(count):
        delimiter, text, meant = make_case(index)
        name = os.path.join(out_dir, "case_%03d" % index)
        with open(name + ".csv", "w", encoding="utf-8", newline="") as f:
            f.write(text)
        with open(name + ".csv", encoding="utf-8-sig", newline="") as f:
            read = [r for r in csv.reader(f, delimiter=delimiter, strict=True)
                    if r != []]
        if read != meant:
            sys.exit("%s.csv: csv.reader reads what the generator did not mean"
                     % name)
        with open(name + ".expected", "w", encoding="ascii", newline="\n") as f:
            f.write(delimiter.encode().hex() + "\n")
            for row in read:
                f.write(",".join(c.encode("utf-8").hex() for c in row) + "\n")
        total += len(read)
    print("%d files, %d records" % (count, total))


if __name__ == "__main__":
    main()
