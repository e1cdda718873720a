"""The checks whose input is the loader path: cuda-compat-path (W14), efa-plugin (W13), efa-symbols (W42) and the
OFI plugin's release, ofi-nccl-version (W51)."""

import artifacts
import pytest
from slime_image.smoke import checks_system
from slime_image.smoke.core import FAIL, PASS, Context

# cuda-compat-path (W14)


@pytest.mark.guard_fails("check:cuda-compat-path")
def test_compat_directory_on_loader_path_fails_and_clean_path_passes():
    bad = Context(env={"LD_LIBRARY_PATH": "/opt/amazon/efa/lib:/usr/local/cuda/compat/lib"})
    result = checks_system.cuda_compat_path(bad)
    assert result.status == FAIL and "/usr/local/cuda/compat/lib" in result.detail
    good = Context(env={"LD_LIBRARY_PATH": "/opt/amazon/efa/lib:/usr/local/cuda/lib64"})
    assert checks_system.cuda_compat_path(good).status == PASS


# efa-plugin (W13): STAND-IN aws-ofi-nccl plugin and libfabric, compiled here (the real ones come
# with the EFA installer, which installs only on a system image)


@pytest.fixture(scope="module")
def efa_standin(tmp_path_factory):
    root = tmp_path_factory.mktemp("efa")
    fabric, plugin = root / "efa" / "lib", root / "ofi-nccl" / "lib"
    fi_getinfo = "int fi_getinfo(void) { return 0; }\n"
    artifacts.shared_library(fabric / "libfabric.so.1", fi_getinfo, "-Wl,-soname,libfabric.so.1")
    artifacts.shared_library(
        plugin / "libnccl-net-ofi.so",
        "int fi_getinfo(void);\nint ncclNetPlugin(void) { return fi_getinfo(); }\n",
        "-L",
        str(fabric),
        "-l:libfabric.so.1",
    )
    return str(fabric), str(plugin)


@pytest.mark.guard_fails("check:efa-plugin")
def test_efa_plugin_whose_libfabric_is_missing_fails(efa_standin):
    _fabric, plugin = efa_standin
    env = {"LD_LIBRARY_PATH": plugin, "NCCL_NET_PLUGIN": "ofi"}
    result = checks_system.efa_plugin(Context(efa_dirs=(plugin,), env=env))
    assert result.status == FAIL and "needs libfabric.so.1, not found" in result.detail


@pytest.mark.guard_fails("check:efa-plugin")
def test_efa_plugin_off_the_loader_path_fails(efa_standin):
    fabric, plugin = efa_standin
    env = {"LD_LIBRARY_PATH": fabric, "NCCL_NET_PLUGIN": "ofi"}
    result = checks_system.efa_plugin(Context(efa_dirs=(plugin,), env=env))
    assert result.status == FAIL and "names libnccl-net-ofi.so, which the loader does not find" in result.summary


def test_efa_plugin_resolving_passes(efa_standin):
    fabric, plugin = efa_standin
    env = {"LD_LIBRARY_PATH": f"{plugin}:{fabric}", "FI_PROVIDER": "efa", "NCCL_NET_PLUGIN": "ofi"}
    result = checks_system.efa_plugin(Context(efa_dirs=(plugin,), env=env))
    assert result.status == PASS and "FI_PROVIDER=efa" in result.summary


def test_efa_plugin_found_only_by_luck_fails(efa_standin):
    fabric, plugin = efa_standin
    env = {"LD_LIBRARY_PATH": f"{plugin}:{fabric}"}
    result = checks_system.efa_plugin(Context(efa_dirs=(plugin,), env=env))
    assert result.status == FAIL and result.summary.startswith("NCCL_NET_PLUGIN is unset")


def test_efa_plugin_named_wrong_fails(efa_standin):
    fabric, plugin = efa_standin
    env = {"LD_LIBRARY_PATH": f"{plugin}:{fabric}", "NCCL_NET_PLUGIN": "aws-ofi"}
    result = checks_system.efa_plugin(Context(efa_dirs=(plugin,), env=env))
    assert result.status == FAIL and "names libnccl-net-aws-ofi.so" in result.summary


def test_efa_plugin_absent_fails(tmp_path):
    result = checks_system.efa_plugin(Context(efa_dirs=(str(tmp_path),), env={}))
    assert result.status == FAIL and "no aws-ofi-nccl plugin" in result.summary


# efa-symbols (W42): STAND-IN libefa and OFI plugin compiled here with real symbol versions (a version script), since
# the EFA installer installs only on a system image: the plugin is linked against a libefa defining EFA_1.1 and
# EFA_1.4, then finds one that defines EFA_1.1 alone, as a libefa from an older installer would.


def versioned_libefa(folder, versions):
    folder.mkdir(parents=True)
    nodes = ["EFA_1.1 { global: efa_old; local: *; };"]
    if "EFA_1.4" in versions:
        nodes.append("EFA_1.4 { global: efa_new; } EFA_1.1;")
    (folder / "efa.map").write_text("\n".join(nodes) + "\n")
    source = "int efa_old(void) { return 1; }\nint efa_new(void) { return 4; }\n"
    version_script = f"-Wl,--version-script={folder / 'efa.map'}"
    artifacts.shared_library(folder / "libefa.so.1", source, "-Wl,-soname,libefa.so.1", version_script)
    return folder


@pytest.fixture(scope="module")
def efa_chain(tmp_path_factory):
    root = tmp_path_factory.mktemp("efa-versions")
    new, old = versioned_libefa(root / "new", {"EFA_1.4"}), versioned_libefa(root / "old", set())
    plugin = root / "ofi-nccl"
    source = "int efa_new(void);\nint ncclNetPlugin(void) { return efa_new(); }\n"
    artifacts.shared_library(plugin / "libnccl-net-ofi.so", source, "-L", str(new), "-l:libefa.so.1")
    return str(plugin), str(new), str(old)


@pytest.mark.guard_fails("check:efa-symbols")
def test_an_older_libefa_on_the_loader_path_fails(efa_chain):
    plugin, _new, old = efa_chain
    env = {"LD_LIBRARY_PATH": f"{plugin}:{old}", "NCCL_NET_PLUGIN": "ofi"}
    result = checks_system.efa_symbols(Context(efa_dirs=(plugin,), env=env))
    assert result.status == FAIL and result.summary == "the OFI plugin's chain lacks 1 symbol version(s)"
    assert "needs EFA_1.4 of libefa.so.1" in result.detail and f"{old}/libefa.so.1 does not define it" in result.detail


def test_the_libefa_it_was_built_against_passes(efa_chain):
    plugin, new, _old = efa_chain
    env = {"LD_LIBRARY_PATH": f"{plugin}:{new}", "NCCL_NET_PLUGIN": "ofi"}
    result = checks_system.efa_symbols(Context(efa_dirs=(plugin,), env=env))
    assert result.status == PASS, result


# ofi-nccl-version (W51): STAND-IN OFI plugins compiled here, each carrying the line a release of aws-ofi-nccl logs when
# NCCL loads it, as a string literal of the library (the real plugin comes with the EFA installer).


def ofi_standin(folder, release):
    line = f"NET/OFI Initializing aws-ofi-nccl {release}" if release else "NET/OFI Initializing aws-ofi-nccl GitHub-dev"
    source = f'const char *nccl_ofi_init_line = "{line}";\nint ncclNetPlugin(void) {{ return 0; }}\n'
    return artifacts.shared_library(folder / "libnccl-net-ofi.so", source)


@pytest.mark.guard_fails("check:ofi-nccl-version")
@pytest.mark.parametrize("release", ["1.19.2", "1.18.0", "1.11.0-aws"])
def test_a_plugin_below_1_20_fails_naming_its_release(tmp_path, release):
    plugin = ofi_standin(tmp_path, release)
    result = checks_system.ofi_nccl_version(Context(efa_dirs=(str(tmp_path),)))
    assert result.status == FAIL
    assert result.summary.startswith(f"aws-ofi-nccl {release} ({plugin}): below 1.20, large NCCL broadcasts")
    assert "EFA installer 1.49.0" in result.detail


@pytest.mark.guard_fails("check:ofi-nccl-version")
def test_a_plugin_naming_no_release_fails(tmp_path):
    ofi_standin(tmp_path, None)
    result = checks_system.ofi_nccl_version(Context(efa_dirs=(str(tmp_path),)))
    assert result.status == FAIL and "names no aws-ofi-nccl release" in result.summary


@pytest.mark.parametrize("release", ["1.20.0", "1.21.1", "2.0.0"])
def test_a_plugin_of_1_20_or_newer_passes_and_is_named(tmp_path, release):
    plugin = ofi_standin(tmp_path, release)
    (tmp_path / "libnccl-net.so").symlink_to(plugin.name)  # one library under two names is named once
    result = checks_system.ofi_nccl_version(Context(efa_dirs=(str(tmp_path),)))
    assert (result.status, result.summary) == (PASS, f"aws-ofi-nccl {release} ({plugin})")


def test_no_plugin_fails_as_efa_plugin_does(tmp_path):
    result = checks_system.ofi_nccl_version(Context(efa_dirs=(str(tmp_path),)))
    assert result.status == FAIL and result.summary.startswith("no aws-ofi-nccl plugin")
