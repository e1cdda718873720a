"""Facts the checks share (slime_image/smoke/lookups.py): imports in one child, read once."""

import os
import sys

from slime_image.smoke import lookups
from slime_image.smoke.core import Context


def modules(tmp_path, **sources):
    for name, source in sources.items():
        (tmp_path / f"{name}.py").write_text(source)
    return Context(python=sys.executable, env={**os.environ, "PYTHONPATH": str(tmp_path)})


def test_each_module_is_imported_and_a_failure_names_its_error(tmp_path):
    ctx = modules(tmp_path, fine="x = 1\n", broken="raise ImportError('built against another torch')\n")
    assert lookups.import_each(ctx, ["fine", "broken", "absent_module"]) == {
        "fine": None,
        "broken": "ImportError: built against another torch",
        "absent_module": "ModuleNotFoundError: No module named 'absent_module'",
    }


def test_a_crash_in_one_import_names_the_module_it_happened_in(tmp_path):
    ctx = modules(tmp_path, fine="x = 1\n", crashing="import os\nos.abort()\n")
    found = lookups.import_each(ctx, ["fine", "crashing", "after"])
    assert set(found) == {"fine", "crashing", "after"}
    assert all(
        why and why.startswith("the importing process died (exit code -6) in import crashing") for why in found.values()
    )


def test_nothing_to_import_starts_no_child(tmp_path):
    ctx = Context(python=str(tmp_path / "no-python"))
    assert lookups.import_each(ctx, []) == {}


def test_every_check_s_imports_share_one_process_that_imports_each_module_once(tmp_path):
    counter = tmp_path / "imported"
    ctx = modules(tmp_path, heavy=f"open({str(counter)!r}, 'a').write('x')\nversion = '1.0'\nprint('noise')\n")
    assert lookups.imports(ctx, [("heavy", "version")]) == {("heavy", "version"): (None, "1.0")}
    assert lookups.import_each(ctx, ["heavy"]) == {"heavy": None}
    assert counter.read_text() == "x"


def test_a_name_the_module_lacks_is_imported_as_its_submodule(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "sub.py").write_text("")
    ctx = modules(tmp_path)
    assert lookups.failed_imports(ctx, [("pkg", "sub")]) == []
    assert lookups.failed_imports(ctx, [("pkg", "absent")]) == [
        "pkg absent: ModuleNotFoundError: No module named 'pkg.absent'"
    ]


def test_a_crash_or_a_hang_costs_only_its_own_request(tmp_path):
    ctx = modules(tmp_path, crashing="import os\nos.abort()\n", hanging="import time\ntime.sleep(60)\n", fine="")
    ctx.timeout = 2
    assert lookups.import_each(ctx, ["crashing"])["crashing"].startswith(
        "the importing process died (exit code -6) in import crashing"
    )
    assert lookups.import_each(ctx, ["fine"]) == {"fine": None}
    assert lookups.import_each(ctx, ["hanging"])["hanging"].startswith(
        "the importing process died (timed out after 2 s) in import hanging"
    )
    assert lookups.import_each(ctx, ["fine"]) == {"fine": None}


def test_the_shared_importer_ends_before_the_checks_that_run_alone(tmp_path):
    ctx = modules(tmp_path, fine="")
    assert lookups.import_each(ctx, ["fine"]) == {"fine": None}
    child = lookups.importer(ctx).proc
    assert child.poll() is None
    lookups.stop_importer(ctx)
    assert child.wait(timeout=10) == 0
    assert lookups.import_each(ctx, ["fine"]) == {"fine": None}  # a later ask starts a new one


def test_the_driver_stub_folder_lives_as_long_as_the_run(tmp_path):
    """The build's gate made a folder in /tmp linking the driver stub and left it there, in the image's last layer
    (a folder of another random name every build): the suite's run removes it when it ends."""
    from slime_image.smoke import cli
    from slime_image.smoke.core import BUILD, Context
    from slime_image.smoke.registry import CHECKS

    stub = tmp_path / "libcuda.so"
    stub.write_bytes(b"")
    ctx = Context(env={"SLIME_SMOKE_DRIVER_STUB": str(stub), "PATH": "/usr/bin:/bin"})
    folder = lookups.driver_stub_dir(ctx)
    assert folder is not None and folder.is_dir()
    cli.run([c for c in CHECKS if c.id == "cuda-compat-path"], ctx, {BUILD})
    assert not folder.exists() and lookups.driver_stub_dir(ctx) != folder
    lookups.remove_driver_stub(ctx)
