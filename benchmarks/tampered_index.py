"""A package index that serves other bytes under one pinned name and version (W50's broken state, a stand-in for a
mirror gone wrong): PROJECT's page lists one wheel, PyPI's file of VERSION with one file added inside it, under PyPI's
file name and with no digest (as a plain mirror's page gives none); every other project's page redirects to PyPI.
The verification build pointed at it must stop at the first pip step that installs PROJECT, naming the package, the
file, the lock's digest and the served one, with nothing tagged (docs/build/<pairing>/tampered-index.md).

    python benchmarks/tampered_index.py [--project setuptools] [--version 81.0.0] [--port 8765] [--work DIR]

then, in another shell:

    python -m tools.release.build_check.run --build-arg PIP_INDEX_URL=http://127.0.0.1:8765/simple \\
        --build-arg PIP_TRUSTED_HOST=127.0.0.1:8765 --out /tmp/tampered ...
"""

from __future__ import annotations

import argparse
import http.server
import json
import subprocess
import sys
import zipfile
from pathlib import Path

PYPI = "https://pypi.org/simple/"
JSON_PAGE = "application/vnd.pypi.simple.v1+json"


def tampered_wheel(project: str, version: str, work: Path) -> Path:
    """PyPI's wheel of project==version with one file added: the same name, other bytes."""
    work.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "-d", str(work)]
    subprocess.run([*command, f"{project}=={version}"], check=True)
    original = next(work.glob(f"{project.replace('-', '_')}-{version}-*.whl"))
    served = work / "served" / original.name
    served.parent.mkdir(exist_ok=True)
    with zipfile.ZipFile(original) as source, zipfile.ZipFile(served, "w", zipfile.ZIP_DEFLATED) as out:
        for item in source.infolist():
            out.writestr(item, source.read(item))
        out.writestr(f"{project.replace('-', '_')}/_not_upstream.py", "# bytes the lock does not name\n")
    return served


def handler(project: str, wheel: Path):
    class Index(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            parts = self.path.strip("/").split("/")
            if parts[:1] == ["files"] and parts[-1] == wheel.name:
                self.answer(200, wheel.read_bytes(), "application/octet-stream")
            elif parts[:1] == ["simple"] and len(parts) == 2 and parts[1] == project:
                page = {"meta": {"api-version": "1.1"}, "name": project, "files": [
                    {"filename": wheel.name, "url": f"/files/{wheel.name}", "hashes": {}}
                ]}  # fmt: skip
                self.answer(200, json.dumps(page).encode(), JSON_PAGE)
            elif parts[:1] == ["simple"] and len(parts) == 2:
                self.send_response(307)
                self.send_header("Location", f"{PYPI}{parts[1]}/")
                self.end_headers()
            else:
                self.answer(404, b"", "text/plain")

        def answer(self, status: int, body: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            sys.stderr.write("tampered-index: " + (args[0] % args[1:]) + "\n")

    return Index


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", default="setuptools")
    parser.add_argument("--version", default="81.0.0")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--work", type=Path, default=Path("/var/tmp/tampered-index"))
    args = parser.parse_args()
    wheel = tampered_wheel(args.project, args.version, args.work)
    print(f"tampered-index: {wheel.name} with other bytes on http://127.0.0.1:{args.port}/simple", flush=True)
    http.server.ThreadingHTTPServer(("127.0.0.1", args.port), handler(args.project, wheel)).serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
