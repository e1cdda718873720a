"""A download the recipe names by its content (W50): the EFA installer and the SLIME router wheel, which come from a
URL rather than a package index, are kept only when their sha256 is the one the recipe pins. Standard library only,
and no import of this package: the Dockerfile copies this one file in before the first step that downloads, and runs it
with the image's system Python.

    python3 fetch.py URL SHA256 OUT    (URL: or a path, for a file another tool fetched, such as pip's own wheel)

What it took is written to /opt/slime-image/downloads/<file name>.json (the file, its sha256, whether it was pinned)
for the image's SBOM (slime-sbom).

An empty SHA256 is a pin not yet made (the recipe's value is written by `python -m tools.release.pin_downloads` on a
machine that reaches the URL): the file is kept with a warning naming it, and the image's record and SBOM say it was
not checked. A file whose bytes are not the pinned ones is removed, and the step fails naming both digests.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import urllib.request

HEX = re.compile(r"[0-9a-f]{64}")
RECORDS = "/opt/slime-image/downloads"


def fetch(url: str, sha256: str, out: str, records: str = RECORDS) -> list[str]:
    """Download `url` to `out` when its sha256 is `sha256`; the lines to print (a warning for an empty pin)."""
    if sha256 and not HEX.fullmatch(sha256):
        raise ValueError(f"the pinned sha256 {sha256!r} is not 64 lower-case hex digits")
    if "://" not in url:
        url = "file://" + os.path.abspath(url)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    partial = f"{out}.partial"
    digest = hashlib.sha256()
    with urllib.request.urlopen(url, timeout=300) as response, open(partial, "wb") as file:
        while chunk := response.read(1 << 20):
            digest.update(chunk)
            file.write(chunk)
    served = digest.hexdigest()
    name = os.path.basename(out)
    if sha256 and served != sha256:
        os.unlink(partial)
        raise ValueError(f"{name} from {url}: its sha256 is {served}, the recipe pins {sha256}")
    shutil.move(partial, out)
    os.makedirs(records, exist_ok=True)
    with open(os.path.join(records, f"{name}.json"), "w") as record:
        json.dump({"file": name, "sha256": served, "pinned": bool(sha256)}, record, indent=1, sort_keys=True)
    if not sha256:
        return [f"fetch: warning: {name} from {url} is not checked: the recipe pins no sha256 for it (it is {served})"]
    return [f"fetch: {name}: sha256 {served}, as pinned"]


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print(f"fetch: {' '.join(argv[1:]) or 'no arguments'}\nfix: run {argv[0]} URL SHA256 OUT", file=sys.stderr)
        return 2
    try:
        lines = fetch(*argv[1:])
    except ValueError as exc:
        print(f"fetch: {exc} (W50)", file=sys.stderr)
        print(
            "fix: a mirror serving other bytes under that name is the cause: point the URL at the real file; a new "
            "upstream file is a new pin (python -m tools.release.pin_downloads)",
            file=sys.stderr,
        )
        return 1
    except OSError as exc:
        print(f"fetch: {argv[1]}: {exc}\nfix: check the URL and that the build reaches it", file=sys.stderr)
        return 1
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
