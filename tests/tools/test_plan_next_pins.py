"""The pins slime's commits after v0.3.1 move to (TransformerEngine 2.18.0, Megatron-Core 0.19.2, NCCL 2.30.7 forced in
last), refused by the plan before any build: W33 read from the real wheels' libraries against the cuBLAS torch 2.11.0
pins, W55 from the forced NCCL. The fixture (fixtures/slime-next) is a Dockerfile of this project's own in the shape of
upstream's newer one; the same fixture at torch's cuBLAS-compatible TransformerEngine and torch's NCCL plans clean.

Real wheels from the real index: a cold cache reads the planned cores' and cuBLAS's libraries once (the plan reads no
other release: its fix names the command that searches them, run here below 2.13.0, which reads only 2.12.0, the
clean plan's core), kept in .cache/plan-tests/symbols as symbol lists of 30 to 40 KB a wheel; a warm plan takes about
a second."""

import json
import os

import artifacts
import pytest
from conftest import ROOT
from packaging.version import Version
from test_host_bad_input import assert_refused, tool
from test_plan import CUTOFF, run_plan

from tools.planner import plan_findings, plan_symbols

pytestmark = pytest.mark.slow
FIXTURE = ROOT / "tests" / "tools" / "fixtures" / "slime-next" / "docker" / "Dockerfile"
PINNED_NCCL_LINE = (
    'torch 2.11.0 has requirement nvidia-nccl-cu13==2.28.9; platform_system == "Linux", but you have '
    "nvidia-nccl-cu13 2.30.7."
)


def plan_fixture(tmp_path, *build_args):
    (tmp_path / "base.json").write_text(json.dumps({"image": "scratch", "partial": False, "distributions": []}))
    args = ["--dockerfile", str(FIXTURE), "--base-manifest", str(tmp_path / "base.json"), "--uploaded-prior-to"]
    args += [CUTOFF, "--json", "-", *(a for b in build_args for a in ("--build-arg", b))]
    return run_plan(*args)


@pytest.mark.guard_fails("finding:cuda-symbols", "finding:forced-nccl")
def test_the_next_upstream_pins_are_refused_naming_w33_and_w55_before_any_build(tmp_path):
    proc, report = plan_fixture(tmp_path)
    assert proc.returncode == 1 and report["ok"] is False, proc.stderr[-2000:]
    assert report["final"]["transformer-engine-cu13"] == "2.18.0" and report["final"]["megatron-core"] == "0.19.2"
    w33 = [f for f in report["final_findings"] if f.startswith("W33:")]
    assert w33 == [
        "W33: transformer-engine-cu13 2.18.0's libtransformer_engine.so needs cublasLtGroupedMatrixLayoutInit_internal "
        "from libcublasLt.so.13, which nvidia-cublas 13.1.0.3 (the plan's) does not export: importing "
        "TransformerEngine fails with `undefined symbol: cublasLtGroupedMatrixLayoutInit_internal`; fix: install a "
        "transformer-engine-cu13 release whose libraries nvidia-cublas 13.1.0.3 exports every symbol of, or a "
        "nvidia-cublas that exports it with the torch that pins it; the newest such release: `.venv/bin/python -m "
        "tools.planner.plan_symbols newest transformer-engine-cu13 --cublas 13.1.0.3 --below 2.18.0 "
        f"--uploaded-prior-to {CUTOFF}`"
    ]
    read = [line for line in proc.stderr.splitlines() if line.startswith("W33: reading")]
    assert read == ["W33: reading nvidia-cublas 13.1.0.3's and transformer-engine-cu13 2.18.0's libraries"]  # no other
    w55 = [f for f in report["final_findings"] if f.startswith("W55:")]
    assert len(w55) == 1 and w55[0].startswith(
        "W55: nvidia-nccl-cu13 2.30.7 (line 17) is forced past torch 2.11.0's exact pin nvidia-nccl-cu13==2.28.9"
    )
    assert "fix: leave nvidia-nccl-cu13 at 2.28.9" in w55[0]


def test_the_same_fixture_at_the_te_that_loads_and_torch_s_nccl_plans_clean(tmp_path):
    proc, report = plan_fixture(tmp_path, "TRANSFORMER_ENGINE_VERSION=2.12.0", "NCCL_VERSION=2.28.9")
    assert report is not None, proc.stderr[-2000:]
    assert report["final"]["transformer-engine-cu13"] == "2.12.0" and report["final"]["nvidia-nccl-cu13"] == "2.28.9"
    assert report["findings"] == [] and report["broken"] == []
    assert proc.returncode == 0 and report["ok"]


def newest(*args):
    """The fix's search command, over the same cache as the plans above (a cold one reads 2.12.0 once, for both)."""
    env = {**os.environ, "PLAN_CACHE": str(ROOT / ".cache" / "plan-tests")}
    return tool("tools.planner.plan_symbols", "newest", *args, "--uploaded-prior-to", CUTOFF, env=env)


def test_the_fix_s_search_answers_the_newest_release_that_loads_reading_only_what_it_must():
    proc = newest("transformer-engine-cu13", "--cublas", "13.1.0.3", "--below", "2.13.0")
    assert (proc.returncode, proc.stdout) == (0, "2.12.0\n"), proc.stderr[-2000:]
    read = [line for line in proc.stderr.splitlines() if line.startswith("W33: reading")]
    assert read == [
        "W33: reading nvidia-cublas 13.1.0.3's libraries",
        "W33: reading transformer-engine-cu13 2.12.0's libraries",
    ]


@pytest.mark.parametrize(
    "args, cause, fix",
    [
        (["torch", "--cublas", "13.1.0.3", "--below", "2.13.0"], "torch is not a TransformerEngine core", "name one"),
        (["transformer-engine-cu13", "--cublas", "13.1.0.3", "--below", "2.x"], "--below '2.x' is not a version", ""),
        (["transformer-engine-cu13", "--cublas", "thirteen", "--below", "2.13.0"], "--cublas 'thirteen' is not", ""),
    ],
)
def test_the_fix_s_search_refuses_bad_input_in_two_lines(args, cause, fix):
    proc = newest(*args)
    assert_refused(proc, "plan_symbols", cause, fix)
    assert proc.returncode == 2 and proc.stdout == "" and "W33: reading" not in proc.stderr


def searched(count: int, answer: int):
    """newest_loading over `count` releases, those up to position `answer` loading: its answer, and what it read."""
    releases, probed = [Version(f"2.{minor}.0") for minor in range(count)], []

    def loads(release):
        probed.append(release)
        return releases.index(release) <= answer

    return releases, plan_symbols.newest_loading(releases, loads), probed


def test_the_search_reads_the_newest_first_then_bisects_and_reads_the_answer_and_the_one_after_it():
    """Every answer's position over every count of releases up to 12 (the index lists 11 cu13 releases below 2.18.0)."""
    for count in range(13):
        for answer in range(-1, count):
            releases, found, probed = searched(count, answer)
            assert found == (releases[answer] if answer >= 0 else None)
            assert len(probed) <= 1 + max(count - 1, 0).bit_length(), (count, answer, probed)
            assert answer < 0 or releases[answer] in probed
            assert answer + 1 >= count or releases[answer + 1] in probed
            assert answer != count - 1 or probed == releases[-1:]


def test_an_exact_nccl_pin_broken_is_w55_and_a_range_or_another_package_is_not():
    assert plan_findings.forced_nccl([PINNED_NCCL_LINE], {}, {"nvidia-nccl-cu13": 17})[0].startswith(
        "W55: nvidia-nccl-cu13 2.30.7 (line 17) is forced past torch 2.11.0's exact pin"
    )
    ranged = "apex 1.0 has requirement nvidia-nccl-cu13>=2.29, but you have nvidia-nccl-cu13 2.28.9."
    other = PINNED_NCCL_LINE.replace("nvidia-nccl-cu13", "nvidia-cublas")
    assert plan_findings.forced_nccl([ranged, other], {"nvidia-nccl-cu13": "2.28.9"}, {}) == []


def test_two_nccl_distributions_over_one_file_are_w55():
    final = {"nvidia-nccl-cu12": "2.27.5", "nvidia-nccl-cu13": "2.28.9", "torch": "2.11.0"}
    found = plan_findings.forced_nccl([], final, {"nvidia-nccl-cu12": 9, "nvidia-nccl-cu13": 5})
    assert found == [
        "W55: nvidia-nccl-cu12 2.27.5 (line 9) and nvidia-nccl-cu13 2.28.9 (line 5) each install "
        "nvidia/nccl/lib/libnccl.so.2: two NCCLs over one file, which either's uninstall removes, and a process loads "
        "whichever was written last; fix: keep the one NCCL distribution torch pins"
    ]


def test_a_wheel_s_libraries_read_through_range_requests_are_the_unpacked_files(tmp_path):
    """A small real wheel (CUDA's runtime, 2.2 MB): its library read from the index member by member, as the plan reads
    TransformerEngine's and cuBLAS's, is what the gate's reader finds in the unpacked wheel."""
    from slime_image.smoke import elf_symbols

    remote = plan_symbols.Index("https://pypi.org/simple", "x86_64", CUTOFF).wheel("nvidia-cuda-runtime", "13.0.96")
    assert remote is not None and remote.endswith("manylinux_2_17_x86_64.whl")
    member = "nvidia/cu13/lib/libcudart.so.13"
    read = plan_symbols.libraries(remote, tmp_path / "remote")[member]
    unpacked = elf_symbols.read(str(artifacts.unpacked(artifacts.CUDART13) / member))
    assert read == plan_symbols.Library.of(unpacked) and "cudaMalloc" in read.exports
    assert plan_symbols.libraries(str(artifacts.wheel(artifacts.CUDART13)), tmp_path / "local")[member] == read
    assert not list((tmp_path / "remote" / "symbols").glob("member-*")), "a member's temporary file was left"


def test_a_missing_symbol_names_the_library_and_the_symbol():
    needs = plan_symbols.Library({"libcublasLt.so.13": frozenset({"a", "b"})}, frozenset())
    gives = plan_symbols.Library({}, frozenset({"a"}))
    found = plan_symbols.unbound({"te/lib/libte.so": needs}, ("libcublasLt.so.13",), {"x/libcublasLt.so.13": gives})
    assert found == [plan_symbols.Unbound("libte.so", "libcublasLt.so.13", ("b",))]
    # A provider wheel without the file: everything bound from it is missing.
    absent = plan_symbols.unbound({"te/lib/libte.so": needs}, ("libcublasLt.so.13",), {"x/libother.so": gives})
    assert absent[0].symbols == ("a", "b")
