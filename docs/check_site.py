"""Check the built documentation site: pages, API reference, gallery images, internal links.

    python docs/check_site.py docs/_build/html

Run by ``make docs`` after Sphinx. It reads the HTML as a browser would find it (files,
links, images; no browser is needed) and exits non-zero naming what is missing.
"""

from __future__ import annotations

import importlib
import os
import sys
from html.parser import HTMLParser
from urllib.parse import urldefrag

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

GUIDES = [
    "index",
    "getting-started",
    "text",
    "images",
    "mixed",
    "pretraining",
    "defaults",
    "pretrained",
    "persistence",
    "scale",
    "speed",
    "reliability",
    "datasets",
    "architecture",
]
GALLERY = "auto_examples/plot_quick_tour.html"


class Page(HTMLParser):
    """The title, links and image sources of one HTML page."""

    def __init__(self):
        super().__init__()
        self.title, self.links, self.images, self._in_title = "", [], [], False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "title":
            self._in_title = True
        elif tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])
        elif tag == "img" and attrs.get("src"):
            self.images.append(attrs["src"])

    def handle_endtag(self, tag):
        if tag == "title":
            self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title += data


def read(root, name) -> Page:
    page = Page()
    with open(os.path.join(root, name), encoding="utf-8") as handle:
        page.feed(handle.read())
    return page


def local(target: str) -> bool:
    return not target.startswith(("http:", "https:", "mailto:", "#", "data:", "javascript:"))


def check(root: str) -> list:
    problems = []
    for guide in GUIDES:
        path = f"{guide}.html"
        if not os.path.exists(os.path.join(root, path)):
            problems.append(f"missing page {path}")
        elif not read(root, path).title.strip():
            problems.append(f"{path} has no title")
    # the API reference: every public name has a page, linked from api.html
    conf = importlib.import_module("conf")
    api = read(root, "api.html") if os.path.exists(os.path.join(root, "api.html")) else Page()
    linked = {urldefrag(link)[0] for link in api.links}
    for module_name in conf.API_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            if name.startswith("__"):
                continue
            candidates = {f"generated/{module_name}.{name}.html"} | {f"generated/{m}.{name}.html" for m in conf.API_MODULES}
            if not candidates & linked:
                problems.append(f"api.html does not link a page for {module_name}.{name}")
    # the gallery: the example ran and its figures are there
    if not os.path.exists(os.path.join(root, GALLERY)):
        problems.append(f"missing gallery page {GALLERY}")
    else:
        images = [src for src in read(root, GALLERY).images if "sphx_glr_plot_quick_tour_0" in src]
        if len(images) < 3:
            problems.append(f"{GALLERY} shows {len(images)} figures, expected 3")
        for src in images:
            path = os.path.normpath(os.path.join(root, os.path.dirname(GALLERY), src))
            if not os.path.exists(path) or os.path.getsize(path) < 1000:
                problems.append(f"{GALLERY}: image {src} is missing or empty")
            else:
                with open(path, "rb") as handle:
                    if handle.read(8) != b"\x89PNG\r\n\x1a\n":
                        problems.append(f"{GALLERY}: image {src} is not a PNG")
    # internal links of every page resolve
    for folder, _, files in os.walk(root):
        for name in files:
            if not name.endswith(".html") or "_static" in folder:
                continue
            relative = os.path.relpath(os.path.join(folder, name), root)
            for link in read(root, relative).links:
                target = urldefrag(link)[0]
                if target and local(target):
                    path = os.path.normpath(os.path.join(folder, target))
                    if not os.path.exists(path):
                        problems.append(f"{relative}: broken link {link}")
    return problems


def main(argv=None):
    root = (argv or sys.argv[1:] or ["docs/_build/html"])[0]
    problems = check(root)
    for problem in problems:
        print(problem)
    print(f"{root}: {'OK' if not problems else f'{len(problems)} problem(s)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
