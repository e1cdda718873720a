"""Each CUDA library once (W46): torch's CUDA wheels and the base's toolkit carry the same libraries, and a node would
pull both while a process may map both. Standard library only, and no import of this package: the Dockerfile copies
this one file in before the torch step and runs it there, in the layer that adds the wheels, so that the bytes it
saves never reach a layer.

`link` resolves each pair where the loader and torch would find them (the wheels' `nvidia/<name>/lib`, which torch's
RPATH lists, and the loader's folders): where the base's copy is the release the wheel is, the wheel's file becomes a
link to it; where it is another release, the base's file becomes a link to the wheel's, torch's pinned one (its bytes
stay in the base's layer, and the record says how many). `twins` is what the build check reads.
"""

from __future__ import annotations

import csv
import glob
import os
import re
import sys
from pathlib import Path

# A library by the name the loader asks for, or its real name: libcublas.so.13, libnvrtc-builtins.so.13.0.88.
SONAME = re.compile(r"^lib[\w.+-]+?\.so(\.\d+)+$")


def conf_folders(conf: Path, seen: set[Path] | None = None) -> list[str]:
    """The folders an ld.so.conf lists, following its `include` globs, as ldconfig reads them."""
    seen = set() if seen is None else seen
    if conf in seen:
        return []
    seen.add(conf)
    try:
        lines = conf.read_text(errors="replace").splitlines()
    except OSError:
        return []
    folders = []
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if line.startswith("include "):
            pattern = line.split(None, 1)[1]
            pattern = pattern if os.path.isabs(pattern) else str(conf.parent / pattern)
            for included in sorted(glob.glob(pattern)):
                folders += conf_folders(Path(included), seen)
        elif line:
            folders.append(line)
    return folders


def loader_folders(env: dict[str, str], conf: Path) -> list[str]:
    """Where the loader looks for a library a process asks for by name: LD_LIBRARY_PATH, then what ld.so.conf lists
    (the cache ldconfig builds from it), then the default folders."""
    listed = [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p]
    return list(dict.fromkeys([*listed, *conf_folders(conf), "/lib", "/usr/lib"]))


def wheel_libraries(site_packages: Path) -> dict[str, tuple[Path, str, str]]:
    """soname -> (file, distribution, version) for each library a wheel installed into nvidia/<name>/lib, the folders
    torch's RPATH lists; the owner is read from the distributions' RECORD files."""
    owners: dict[str, tuple[str, str]] = {}
    for record in site_packages.glob("*.dist-info/RECORD"):
        name, _, version = record.parent.name.removesuffix(".dist-info").partition("-")
        with record.open(newline="", errors="replace") as rows:
            for row in csv.reader(rows):
                if row and row[0].startswith("nvidia/"):
                    owners[os.path.normpath(row[0])] = (name, version)
    found = {}
    for path in sorted(site_packages.glob("nvidia/*/lib/lib*.so.*")):
        owner = owners.get(str(path.relative_to(site_packages)))
        if owner and SONAME.match(path.name) and path.is_file():
            found[path.name] = (path, *owner)
    return found


def release_of(real: Path) -> str:
    """The release a file's real name carries: libcublas.so.13.1.0.3 -> 13.1.0.3, and libcudart.so.13 -> 13 (a real
    name that is the soname tells only the major)."""
    return real.name.partition(".so.")[2]


def same_release(a: str, b: str) -> bool:
    """13.1.0.3 and 13.1.0.3, or 9.19.0 and 9.19.0.56 (a real name may drop the build number): equal on the first three
    parts, and on all the parts both have when one has fewer."""
    left, right = a.split("."), b.split(".")
    shared = min(len(left), len(right), 3)
    return bool(a and b) and len(left) >= min(3, len(right)) and left[:shared] == right[:shared]


def base_copy(soname: str, folders: list[str], site_packages: Path) -> Path | None:
    """The first file by that name in the loader's folders that is not one of the wheels' (after links)."""
    for folder in folders:
        candidate = Path(folder) / soname
        if candidate.exists() and site_packages not in Path(os.path.realpath(candidate)).parents:
            return candidate
    return None


def link(site_packages: Path, folders: list[str]) -> list[str]:
    """Make each pair one file (see the module's docstring); returns one line per library linked."""
    lines = []
    for soname, (wheel_file, distribution, version) in wheel_libraries(site_packages).items():
        found = base_copy(soname, folders, site_packages)
        if found is None:
            continue
        real = Path(os.path.realpath(found))
        release = release_of(real)
        size = real.stat().st_size
        if same_release(release, version):
            wheel_file.unlink()
            wheel_file.symlink_to(real)
            lines.append(f"{soname}: {distribution} {version} is the base's {real} ({size} bytes not held twice)")
        else:
            real.unlink()
            real.symlink_to(wheel_file)
            lines.append(
                f"{soname}: the base's {real} ({release}) now points to {distribution} "
                f"{version}, torch's; its {size} bytes stay in the base's layer"
            )
    return lines


def twins(folders: list[str]) -> dict[str, list[tuple[str, int]]]:
    """soname -> each distinct file (real path, bytes) the given folders hold by that name, for those held more than
    once: what a process may map twice, and a node pulls twice."""
    found: dict[str, dict[str, int]] = {}
    for folder in dict.fromkeys(folders):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            path = os.path.join(folder, name)
            if SONAME.match(name) and os.path.isfile(path):
                real = os.path.realpath(path)
                found.setdefault(name, {})[real] = os.path.getsize(real)
    return {name: sorted(files.items()) for name, files in sorted(found.items()) if len(files) > 1}


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] != "link":
        print(
            f"cuda-once: {' '.join(argv[1:]) or 'no command'}: not a command it knows\n"
            f"fix: run {argv[0]} link SITE_PACKAGES",
            file=sys.stderr,
        )
        return 2
    site_packages = Path(argv[2])
    if not site_packages.is_dir():
        print(
            f"cuda-once: {site_packages} is not a folder\nfix: name the site-packages of the image's venv",
            file=sys.stderr,
        )
        return 2
    try:
        lines = link(site_packages, loader_folders(dict(os.environ), Path("/etc/ld.so.conf")))
    except OSError as exc:
        print(f"cuda-once: {exc.strerror}: {exc.filename}\nfix: run it as root in the build step", file=sys.stderr)
        return 1
    for line in lines:
        print(f"cuda-once: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
