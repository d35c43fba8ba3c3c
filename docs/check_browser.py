"""Open the built site in a real headless browser (Chromium) and check what a reader sees.

    python docs/check_browser.py docs/_build/html [--out screenshots/]

``check_site.py`` reads the HTML files; this script lets Chromium render them. For the
home page, the API reference, one class's reference page and the gallery's first example
it checks that the rendered DOM holds the page's heading and, for the gallery, its
figure; that every image the page shows was decoded by the browser (``naturalWidth`` > 0,
read by a script in the page); and that a screenshot is not blank. Exits non-zero naming
what is missing. ``make docs-browser`` installs Debian's ``chromium`` first when it is
absent (CI runs as root).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

PAGES = [
    ("index.html", "tabformer", 0),
    ("api.html", "API reference", 0),
    ("generated/tabformer.TabFormerClassifier.html", "TabFormerClassifier", 0),
    ("auto_examples/plot_quick_tour.html", None, 1),  # (page, heading text, minimum images)
]

# Appended to a copy of each page: after load, writes what the browser decoded into the DOM.
PROBE = """
<script>
window.addEventListener("load", function () {
  var images = Array.from(document.images);
  var broken = images.filter(function (i) { return !(i.complete && i.naturalWidth > 0); }).map(function (i) { return i.src; });
  var out = document.createElement("pre");
  out.id = "browser-probe";
  out.textContent = "IMAGES " + images.length + " BROKEN " + JSON.stringify(broken);
  document.body.appendChild(out);
});
</script>
"""


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("no Chromium found: apt-get install -y chromium (make docs-browser does it)")


def render(browser: str, path: str, screenshot: str) -> str:
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files"]
    flags += ["--virtual-time-budget=5000", "--hide-scrollbars", "--window-size=1280,1600"]
    url = "file://" + os.path.abspath(path)
    dom = subprocess.run([*flags, "--dump-dom", url], capture_output=True, text=True, timeout=120).stdout
    subprocess.run([*flags, f"--screenshot={screenshot}", url], capture_output=True, timeout=120)
    return dom


def check_page(browser: str, root: str, page: str, heading: str | None, min_images: int, out: str) -> list[str]:
    source = os.path.join(root, page)
    if not os.path.exists(source):
        return [f"{page}: not built"]
    # A probed copy beside the original, so relative links and images resolve the same way.
    probed = os.path.join(os.path.dirname(source), "_probe_" + os.path.basename(source))
    with open(source, encoding="utf-8") as f:
        html = f.read()
    with open(probed, "w", encoding="utf-8") as f:
        f.write(html.replace("</body>", PROBE + "</body>"))
    shot = os.path.join(out, page.replace("/", "_") + ".png")
    try:
        dom = render(browser, probed, shot)
    finally:
        os.remove(probed)
    problems = []
    titles = re.findall(r"<h1[^>]*>(.*?)</h1>", dom, flags=re.S)
    if not titles:
        problems.append(f"{page}: the rendered page has no <h1>")
    elif heading and not any(heading in re.sub(r"<[^>]+>", "", t) for t in titles):
        problems.append(f"{page}: heading {heading!r} not in the rendered <h1> {titles[:1]}")
    probe = re.search(r"IMAGES (\d+) BROKEN (\[.*?\])", dom)
    if probe is None:
        problems.append(f"{page}: the in-page probe did not run (the browser did not load the page)")
    else:
        count, broken = int(probe.group(1)), probe.group(2)
        if broken != "[]":
            problems.append(f"{page}: images the browser could not decode: {broken}")
        if count < min_images:
            problems.append(f"{page}: {count} images rendered, expected at least {min_images}")
    if not os.path.exists(shot):
        problems.append(f"{page}: no screenshot")
    else:
        pixels = np.asarray(Image.open(shot).convert("L"), dtype=float)
        if pixels.std() < 5:
            problems.append(f"{page}: the screenshot is blank (pixel std {pixels.std():.1f})")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", help="the built site, e.g. docs/_build/html")
    parser.add_argument("--out", default=None, help="folder for the screenshots (default: a temporary one)")
    args = parser.parse_args(argv)
    out = args.out or tempfile.mkdtemp(prefix="tabformer-docs-")
    os.makedirs(out, exist_ok=True)
    browser = chromium()
    problems = []
    for page, heading, min_images in PAGES:
        problems += check_page(browser, args.root, page, heading, min_images, out)
    for problem in problems:
        print("MISSING:", problem)
    print(f"{len(PAGES)} pages rendered in {os.path.basename(browser)}; screenshots in {out}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
