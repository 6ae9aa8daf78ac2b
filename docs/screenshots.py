"""Screenshots of the built documentation site in headless Chromium, to look at it as a reader does.

    python docs/screenshots.py site docs/screenshots     # after `make docs`; `make docs-check` runs both

Takes the home page, a how-to page and the API reference at a desktop width into PNG files, and checks
each page's HTML has the site's navigation and its pictures' files exist. Needs Chromium (Debian:
``apt-get install chromium``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

PAGES = {
    "home": "index.html",
    "how-to": "how-to/keep-laid-out/index.html",
    "api-reference": "reference/python-api/index.html",
    "concepts": "concepts/curves/index.html",
}


def browser() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise SystemExit("no Chromium found: install it (apt-get install chromium) to take the site's screenshots")


def check(site: Path, page: str) -> None:
    html = (site / page).read_text()
    if 'class="md-nav' not in html:
        raise SystemExit(f"{page}: no navigation in the built page")
    for image in re.findall(r'<img[^>]+src="([^"]+)"', html):
        if (
            not image.startswith(("http:", "https:", "data:"))
            and not (site / page).parent.joinpath(image).resolve().exists()
        ):
            raise SystemExit(f"{page}: its picture {image} is missing")


def main(site: str, out: str) -> None:
    site_dir, out_dir = Path(site).resolve(), Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    chromium = browser()
    for name, page in PAGES.items():
        check(site_dir, page)
        target = out_dir / f"{name}.png"
        subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1280,900",
             f"--screenshot={target.resolve()}", (site_dir / page).as_uri()],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        print(target)


if __name__ == "__main__":
    main(*sys.argv[1:3])
