"""A real package index for the planner's tests: small wheels and an sdist written here, served as PEP 691 JSON
pages with upload times by http.server on 127.0.0.1 (the `index` fixture gives its /simple URL)."""

import base64
import hashlib
import http.server
import io
import json
import tarfile
import threading
import zipfile
from pathlib import Path

import pytest

UPLOADED = "2026-10-01T00:00:00Z"


def wheel(folder: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> dict:
    stem = f"{name.replace('-', '_')}-{version}"
    files = {
        f"{name.replace('-', '_')}/__init__.py": b"",
        f"{stem}.dist-info/METADATA": (
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
            + "".join(f"Requires-Dist: {r}\n" for r in requires)
        ).encode(),
        f"{stem}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: slime-image tests\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
    }
    path = folder / f"{stem}-py3-none-any.whl"
    record = []
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in files.items():
            archive.writestr(member, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{member},sha256={digest},{len(data)}")
        archive.writestr(f"{stem}.dist-info/RECORD", "\n".join([*record, f"{stem}.dist-info/RECORD,,"]) + "\n")
    return listed(path)


def listed(path: Path) -> dict:
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    return {
        "filename": path.name,
        "url": f"../../files/{path.name}",
        "hashes": {"sha256": sha},
        "upload-time": UPLOADED,
    }


def unbuildable_sdist(folder: Path, name: str, version: str) -> dict:
    """An sdist whose dependencies are known only by building it, and whose build fails, as transformer_engine_torch's
    would in the planner's environment (it needs torch to build). Its build backend lies in the sdist itself, so pip
    needs nothing from an index to reach the failure."""
    stem = f"{name.replace('-', '_')}-{version}"
    fails = "raise SystemExit('building this needs torch, which this environment does not hold')"
    files = {
        "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n',
        "backend.py": f"def get_requires_for_build_wheel(config_settings=None):\n    {fails}\n",
        "PKG-INFO": f"Metadata-Version: 2.2\nName: {name}\nVersion: {version}\nDynamic: Requires-Dist\n",
    }
    path = folder / f"{stem}.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for member, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{stem}/{member}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return listed(path)


@pytest.fixture(scope="session")
def index(tmp_path_factory):
    root = tmp_path_factory.mktemp("index")
    (root / "files").mkdir()
    projects = {
        "slime-fixture": [wheel(root / "files", "slime-fixture", v, ("slime-fixture-dep",)) for v in ("1.0", "2.0")],
        "slime-fixture-dep": [wheel(root / "files", "slime-fixture-dep", v) for v in ("1.0", "2.0")],
        "slime-fixture-built": [unbuildable_sdist(root / "files", "slime-fixture-built", "1.0")],
    }

    class Index(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(root), **kwargs)

        def do_GET(self):
            name = self.path.strip("/").split("/")
            if len(name) == 2 and name[0] == "simple":
                if name[1] not in projects:
                    self.send_error(404)
                    return
                body = json.dumps(
                    {"meta": {"api-version": "1.1"}, "name": name[1], "files": projects[name[1]]}
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            super().do_GET()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    server.shutdown()
