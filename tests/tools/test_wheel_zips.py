"""Every zip the pin tools read goes through wheel_zip.Wheel, which turns each class zipfile raises for a zip it cannot
read into one refusal (sweep 7 T1: pin_downloads ended in RuntimeError for an encrypted METADATA, NotImplementedError
for "compressed patched data" or an unknown method; wheel_unlike caught BadZipFile, OSError, zlib.error, KeyError).
The members: each way zipfile fails (UNREADABLE) x each reader (pin_downloads' wheel check, the plan index's METADATA,
the planner's WHEEL tags). The zips are this test's own, patched in their headers' flag and method fields."""

from __future__ import annotations

import contextlib
import functools
import http.server
import io
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT
from silent_servers import served
from slime_image.errors import UserError

from tools.planner import plan_index, wheel_tags, wheel_zip
from tools.release import pin_downloads

NAME, VERSION = "sglang-router", "0.3.2"
FILE = f"sglang_router-{VERSION}-cp38-abi3-manylinux_2_28_x86_64.whl"


def wheel(flags: int = 0, method: int | None = None, cut: bool = False) -> bytes:
    """A stored wheel whose every entry's headers (local and central) say `flags` and `method`."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr(f"sglang_router-{VERSION}.dist-info/METADATA", f"Name: {NAME}\nVersion: {VERSION}\n" * 20)
        archive.writestr(f"sglang_router-{VERSION}.dist-info/WHEEL", "Tag: cp38-abi3-manylinux_2_28_x86_64\n" * 20)
    data = bytearray(out.getvalue())
    for signature, flag_at, method_at in ((b"PK\x03\x04", 6, 8), (b"PK\x01\x02", 8, 10)):
        at = data.find(signature)
        while at != -1:
            was = int.from_bytes(data[at + flag_at : at + flag_at + 2], "little")
            data[at + flag_at : at + flag_at + 2] = (was | flags).to_bytes(2, "little")
            if method is not None:
                data[at + method_at : at + method_at + 2] = method.to_bytes(2, "little")
            at = data.find(signature, at + 4)
    return bytes(data[: len(data) // 2] if cut else data)


UNREADABLE = {
    "encrypted": functools.partial(wheel, flags=0x1),  # RuntimeError
    "compressed patched data": functools.partial(wheel, flags=0x20),  # NotImplementedError
    "an unknown method": functools.partial(wheel, method=99),  # NotImplementedError
    "deflate over bytes not deflated": functools.partial(wheel, method=zipfile.ZIP_DEFLATED),  # zlib.error
    "bzip2 over bytes not bzip2": functools.partial(wheel, method=zipfile.ZIP_BZIP2),  # OSError
    "lzma over bytes not lzma": functools.partial(wheel, method=zipfile.ZIP_LZMA),  # LZMAError / EOFError
    "cut in half": functools.partial(wheel, cut=True),  # BadZipFile
    "no zip": lambda: b"not a zip at all",
}


def test_the_stand_in_wheel_unpatched_is_read_by_every_reader(tmp_path):
    path = tmp_path / FILE
    path.write_bytes(wheel())
    assert pin_downloads.wheel_unlike(NAME, VERSION, path) is None
    assert wheel_tags.read_tags(path.as_uri()) == ["cp38-abi3-manylinux_2_28_x86_64"] * 20


@pytest.mark.parametrize("how", UNREADABLE)
def test_pin_downloads_refuses_a_wheel_zipfile_cannot_read(how, tmp_path):
    path = tmp_path / FILE
    path.write_bytes(UNREADABLE[how]())
    assert "it is no zip archive zipfile can read" in pin_downloads.wheel_unlike(NAME, VERSION, path)


@pytest.mark.parametrize("how", UNREADABLE)
def test_the_planners_wheel_tags_refuse_a_wheel_zipfile_cannot_read(how, tmp_path):
    path = tmp_path / FILE
    path.write_bytes(UNREADABLE[how]())
    with pytest.raises(UserError) as refused:
        wheel_tags.read_tags(path.as_uri())
    assert path.as_uri() in refused.value.cause and "cannot be read as a zip" in refused.value.cause


@pytest.mark.parametrize("how", UNREADABLE)
def test_the_plan_index_refuses_a_wheel_zipfile_cannot_read(how, tmp_path):
    """Stand-in: http.server on 127.0.0.1 for an index serving the wheel (it answers no ranges: the whole file)."""
    with serving(tmp_path, UNREADABLE[how]()) as url, pytest.raises(ValueError):
        plan_index.wheel_files(url)


def test_every_zip_the_pin_tools_read_is_read_through_wheel_zip():
    """The members of the class: each module of tools/ that opens a zip to read it. plan_symbols (W33's symbol
    check) streams members through its own inflater and is not a pin tool; the others write zips."""
    reading = {
        str(path.relative_to(ROOT))
        for path in (ROOT / "tools").rglob("*.py")
        for line in path.read_text().splitlines()
        if "zipfile.ZipFile(" in line and '"w"' not in line
    }
    assert reading == {"tools/planner/plan_symbols.py"}, reading
    for module in (pin_downloads, plan_index, wheel_tags):
        assert "import zipfile" not in Path(module.__file__).read_text(), module.__name__


def bomb(member: str) -> bytes:
    """A wheel whose `member` (METADATA or WHEEL) deflates 1 MiB past wheel_zip.BOUND into a few kilobytes."""
    out = io.BytesIO()
    head = {"METADATA": f"Name: {NAME}\nVersion: {VERSION}\n", "WHEEL": "Tag: cp38-abi3-manylinux_2_28_x86_64\n"}
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in head.items():
            body = text.encode() + (b"\n" * (wheel_zip.BOUND + (1 << 20)) if name == member else b"")
            archive.writestr(f"sglang_router-{VERSION}.dist-info/{name}", body)
    return out.getvalue()


@contextlib.contextmanager
def serving(tmp_path, data: bytes):
    """Stand-in: http.server on 127.0.0.1 for an index serving the wheel (it answers no ranges: the whole file)."""
    (tmp_path / FILE).write_bytes(data)
    with served(functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))) as url:
        yield f"{url}/{FILE}"


@pytest.mark.parametrize("member", ["METADATA", "WHEEL"])
def test_every_reader_refuses_a_member_inflating_past_the_bound(member, tmp_path):
    """Sweep 8 N7: each reader (pin_downloads' check, the plan index, the WHEEL tags) stops at the bound, naming the
    member and the bound, where the old reads inflated the member whole."""
    data = bomb(member)
    assert len(data) < wheel_zip.BOUND // 8
    said = f"{member} inflates past {wheel_zip.BOUND >> 20} MiB"
    path = tmp_path / FILE
    path.write_bytes(data)
    if member == "METADATA":  # pin_downloads reads METADATA only, the WHEEL tags WHEEL only
        assert said in pin_downloads.wheel_unlike(NAME, VERSION, path)
    else:
        with pytest.raises(UserError) as refused:
            wheel_tags.read_tags(path.as_uri())
        assert said in refused.value.cause
    with serving(tmp_path, data) as url, pytest.raises(ValueError, match=said):
        plan_index.wheel_files(url)
