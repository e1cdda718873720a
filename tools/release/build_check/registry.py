"""A registry on 127.0.0.1 for the verification build (Debian's docker-registry, the CNCF distribution server): the
stand-in base is pushed there and the build names it by digest, as a production build names the real base (W50), so
that the record says which bytes the image was built on.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
import urllib.error
from collections.abc import Callable, Iterator
from pathlib import Path

from slime_image import fetch
from slime_image.children import Children
from slime_image.errors import UserError

PROGRAM = "docker-registry"


PORT = 5000  # fixed: the base's reference is a build argument, and every layer after it holds it


@contextlib.contextmanager
def serving(folder: Path, port: int = PORT) -> Iterator[str]:
    """A registry storing under `folder` on 127.0.0.1:`port`, for as long as the block runs; yields localhost:port."""
    if shutil.which(PROGRAM) is None:
        raise UserError(
            f"{PROGRAM} is not installed (the verification build's local registry)",
            "apt-get install -y docker-registry",
        )
    folder.mkdir(parents=True, exist_ok=True)
    host = f"localhost:{port}"
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", port)) == 0:
            raise UserError(f"{host} is taken: the local registry needs it", f"stop what listens on port {port}")
    config = folder / "config.yml"
    config.write_text(
        f"version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {folder / 'storage'}\n"
        f"http:\n  addr: 127.0.0.1:{port}\n"
    )
    with Children(grace=30) as children:
        children.start([PROGRAM, "serve", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            with contextlib.suppress(urllib.error.URLError, ConnectionError):
                fetch.open_url(f"http://{host}/v2/", timeout=1).close()
                break
            time.sleep(0.1)
        else:
            raise UserError(f"{PROGRAM} did not answer on {host}", f"run '{PROGRAM} serve {config}' and read its error")
        yield host


def push(buildah: Callable[..., subprocess.CompletedProcess], image: str, host: str, name: str, work: Path) -> str:
    """Push a local image to the registry, uncompressed (a copy on one machine), and return its reference by digest."""
    digest_file = work / f"{name}.digest"
    buildah(
        "push", "--tls-verify=false", "--disable-compression", "--format", "docker", "--digestfile", str(digest_file),
        image, f"docker://{host}/{name}",
    )  # fmt: skip
    return f"{host}/{name}@{digest_file.read_text().strip()}"
