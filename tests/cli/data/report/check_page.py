"""Reads what d5 report wrote, for tests/cli/test_report_cli.c.

check_page.py svg FILE   prints the text of every <text> element, one a line;
                         fails unless FILE is well-formed XML with an <svg> root
check_page.py page DIR   prints the problems of DIR/index.html, one a line
                         (nothing when there are none): an id used twice, a
                         reference to a missing id, a link that leaves DIR or
                         names a missing file, a script, a style sheet, a font
                         or any other address outside DIR
"""
import collections
import os
import re
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser


def svg_texts(path):
    root = ET.parse(path).getroot()
    if not root.tag.endswith("svg"):
        raise SystemExit(f"{path}: the root element is {root.tag}")
    for t in root.iter():
        if t.tag == "text" or t.tag.endswith("}text"):
            print("".join(t.itertext()).strip())


class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.refs, self.bad = collections.Counter(), [], []

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "link", "iframe", "object", "embed"):
            self.bad.append(f"element <{tag}>")
        for k, v in attrs:
            if k == "id":
                self.ids[v] += 1
            if k in ("href", "xlink:href", "src") and v is not None:
                self.refs.append(v)


def page_problems(folder):
    text = open(os.path.join(folder, "index.html"), encoding="utf-8").read()
    p = Page()
    p.feed(text)
    bad = p.bad + [f"id twice: {k}" for k, n in p.ids.items() if n > 1]
    for r in p.refs:
        if r.startswith("#"):
            if r[1:] not in p.ids:
                bad.append(f"no id {r}")
        elif r.startswith("data:image/png;base64,"):
            pass
        elif "/" in r or ":" in r or not os.path.isfile(os.path.join(folder, r)):
            bad.append(f"link {r}")
    # Addresses outside the page, wherever they hide (attributes, styles).
    bad += [f"address {m}" for m in re.findall(r"(?:https?|ftp)://[^\s\"'<]*", text)]
    bad += [f"url {m}" for m in re.findall(r"url\((?!#)[^)]*\)", text)]
    bad += [f"css {m}" for m in ("@import", "@font-face") if m in text]
    for b in bad:
        print(b)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("svg", "page"):
        raise SystemExit(__doc__)
    (svg_texts if sys.argv[1] == "svg" else page_problems)(sys.argv[2])
