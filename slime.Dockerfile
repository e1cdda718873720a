# syntax=docker/dockerfile:1
# SLIME (RL post-training: SGLang rollouts, Megatron-LM training, Ray) for EKS on H200 and B300, CUDA 13.
# Every ARG below that names a version is the single source of truth for it: the Makefile's tag, the
# version table of docs/pairings.md, /opt/slime-image/versions.json and the tests all read these lines
# (tools/release/versions.py on the host, slime-record in the build). Each download pin (the base's digest, every
# *_SHA256) says where it came from on the line above it (tools/inputs/download_pins.py; docs/building.md).

# Base: CUDA's own devel image (toolkit, nvcc, NCCL, the driver stub), Ubuntu 24.04, no Python packages. 13.0.2 is
# the release of torch 2.11.0+cu130's CUDA wheels (its cuda-toolkit pin), so the torch step below keeps one copy of
# each library (W46); no system cuDNN, so torch's wheel is the only one (W44).
# BASE_IMAGE from: AWS's sample recipes, which pin NGC's image by this digest (not pulled here)
ARG BASE_IMAGE=nvcr.io/nvidia/cuda:13.0.2-devel-ubuntu24.04@sha256:5dc1bca23d05bd37b011be68ec470c03b403a5da07ec3a86e41af9470e9d0cc6
FROM ${BASE_IMAGE}

ARG BASE_IMAGE
# The slime release this build pairs with: it names the lock, locks/<PAIRING>.lock. The defaults of PAIRING and of
# every version ARG below are copies of pairings/<default>.toml, written by `make promote` (never by hand; `make lint`
# fails when they differ), so that a plain `docker build` builds the default pairing.
ARG PAIRING=v0.3.1
ARG EFA_INSTALLER_VERSION=1.49.0
# The sha256 of each file fetched by URL rather than from a package index (W50): image/slime_image/fetch.py keeps only
# those bytes. Empty is a pin not yet made (python -m tools.release.pin_downloads writes it): the file is taken with a
# warning, and versions.json and the SBOM say it was not checked.
# EFA_INSTALLER_SHA256 from: NVIDIA Dynamo's EFA-setup page, for installer 1.49.0 (not yet compared with the file)
ARG EFA_INSTALLER_SHA256=cf2e9281a2328a243c76f911a490faed43ca0fecfe4733c25e34b2e92a32c309
ARG PIP_VERSION=26.3
# The sha256 of pip's wheel at PIP_VERSION: pip itself is hash-checked like every other (W50).
# PIP_SHA256 from: PyPI's digest of pip's wheel at PIP_VERSION (test_pinned_bytes.py holds it to the index's)
ARG PIP_SHA256=f3b60b20ffaadd4415ed7957212a38ac63fa4c5fa375bd0f4a797777940fad13
ARG SGLANG_VERSION=0.5.15.post1
ARG TORCH_VERSION=2.11.0+cu130
ARG TRANSFORMER_ENGINE_VERSION=2.12.0
ARG MEGATRON_COMMIT=1dcf0dafa884ad52ffb243625717a3471643e087
ARG SGL_ROUTER_RELEASE=v0.3.2-9daabcd
ARG SGL_ROUTER_VERSION=0.3.2
ARG SGL_ROUTER_SHA256=
ARG SLIME_REF=v0.3.1
ARG SLIME_COMMIT=a6272da0d4f3d0a08520c99a2f3b4f6c887960dc
ARG MBRIDGE_VERSION=0.15.1
ARG APEX_COMMIT=10417aceddd7d5d05d7cbf7b0fc2daad1105f8b4
# transformers declares its kernels bound only in an extra, so pip never applies it (W30): the bound for the
# transformers this pairing's SGLang pins.
ARG KERNELS_REQUIREMENT="kernels>=0.14.1,<0.15"
# Where each download comes from, upstream by default; point them at a mirror to build without GitHub or AWS
# (the verification build, `make build-check`, does). pip's index is redirected the usual way (PIP_INDEX_URL).
ARG EFA_INSTALLER_URL=https://efa-installer.amazonaws.com
ARG SGL_ROUTER_URL=https://github.com/zhuzilin/sgl-router/releases/download
ARG MEGATRON_REPO_URL=https://github.com/NVIDIA/Megatron-LM.git
ARG SLIME_REPO_URL=https://github.com/THUDM/slime.git
ARG APEX_REPO_URL=https://github.com/NVIDIA/apex.git
# pip's own index settings reach every pip step when given (--build-arg PIP_INDEX_URL=https://mirror/simple);
# unset, pip uses PyPI. Declared here because a build argument the Dockerfile does not declare reaches no RUN.
ARG PIP_INDEX_URL
ARG PIP_EXTRA_INDEX_URL
ARG PIP_TRUSTED_HOST

# pip keeps what it downloads in a build cache mount (`--mount=type=cache` on each pip step below, which BuildKit
# and buildah honour): a rebuild reads the wheels from there, and no layer holds them.
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV DEBIAN_FRONTEND=noninteractive \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

# System packages and EFA: Ubuntu's Python 3.12 with its headers (helpers_cpp and TransformerEngine compile
# against them), compilers and git for the source builds; the EFA installer's libfabric and aws-ofi-nccl,
# without which NCCL silently falls back to TCP sockets on EKS (W13). Installer 1.49.0 carries aws-ofi-nccl 1.20.0,
# tested with the NCCL 2.28.9 torch ships, and the first without the broadcast hang (W51). No SSH server (Ray on
# Kubernetes does not use it); no GDRCopy (it needs a host kernel module). /opt/driver-stub exposes the toolkit's libcuda stub as
# libcuda.so.1 for build-time imports only; it is never on the loader path.
# The installer is fetched by its sha256 (W50). apt's and dpkg's caches and logs are removed with the lists: a layer
# keeps no file that differs from one build to the next (the log's times) or that no process reads. The standard
# library's bytecode is checked by its sources' hashes: a reproducible build gives every file one time, which the
# time-stamped .pyc files apt writes would never match.
COPY image/slime_image/fetch.py image/slime_image/pip_reports.py image/slime_image/json_input.py /opt/slime-image/slime_image/
RUN apt-get update && \
    apt-get install -y --no-install-recommends python3.12 python3.12-dev python3.12-venv build-essential git \
      curl ca-certificates pciutils environment-modules libhwloc-dev && \
    python3.12 /opt/slime-image/slime_image/fetch.py "${EFA_INSTALLER_URL}/aws-efa-installer-${EFA_INSTALLER_VERSION}.tar.gz" \
      "${EFA_INSTALLER_SHA256}" /tmp/aws-efa-installer.tar.gz && \
    tar -xzf /tmp/aws-efa-installer.tar.gz -C /tmp && \
    env -C /tmp/aws-efa-installer ./efa_installer.sh -y --skip-kmod --skip-limit-conf --no-verify && \
    python3.12 -m compileall -q -j 0 -x /test/ --invalidation-mode checked-hash "$(python3.12 -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')" && \
    apt-get clean && \
    rm -rf /tmp/aws-efa-installer /tmp/aws-efa-installer.tar.gz /var/lib/apt/lists/* /var/cache/apt/*.bin \
      /var/log/apt /var/log/dpkg.log /var/log/alternatives.log /var/cache/debconf/*-old /var/lib/dpkg/*-old \
      /var/cache/ldconfig/aux-cache && \
    mkdir -p /opt/driver-stub && ln -s /usr/local/cuda/lib64/stubs/libcuda.so /opt/driver-stub/libcuda.so.1
# Each entry has one reason (a structural rule checks them): the OFI plugin NCCL loads by the name below and
# libfabric it needs (W13); the toolkit's libcudart.so.13 for the torch_memory_saver hook, which has no RPATH
# (W5; torch itself finds its CUDA wheels through its own RPATH); the host driver where the NVIDIA runtime
# mounts it. Written out in full: no CUDA forward-compat directory (W14).
ENV LD_LIBRARY_PATH=/opt/amazon/ofi-nccl/lib:/opt/amazon/efa/lib:/usr/local/cuda/lib64:/usr/local/nvidia/lib64 \
    NCCL_NET_PLUGIN=ofi

# One virtual environment holds every Python distribution in the image, first on PATH, with a pinned pip, itself
# hash-checked (W50). No pip step compiles bytecode (PIP_COMPILE=0): one step near the end writes it for what a job
# imports (slime-bytecode), 0.15 of the 0.53 GB pip would write; the rest compiles in memory when first imported.
# Every pip install keeps what it installed, by sha256, for the image's SBOM (pip_reports.py).
ENV VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:${PATH} \
    PIP_COMPILE=0
RUN --mount=type=cache,target=/root/.cache/pip,sharing=locked python3.12 -m venv /opt/venv && \
    python -m pip download -q --no-deps -d /tmp/pip "pip==${PIP_VERSION}" && \
    python /opt/slime-image/slime_image/fetch.py "/tmp/pip/pip-${PIP_VERSION}-py3-none-any.whl" "${PIP_SHA256}" \
      "/tmp/pip-${PIP_VERSION}-py3-none-any.whl" && \
    python -m pip install --no-deps --report /tmp/report.json "/tmp/pip-${PIP_VERSION}-py3-none-any.whl" && \
    rm -r /tmp/pip /tmp/pip-*.whl && python /opt/slime-image/slime_image/pip_reports.py /tmp/report.json pip

# The pairing's stack lock, written by `make lock` from the plan of this file: its lock's pins for what the layers
# up to TransformerEngine install, so that they install the versions that were planned and checked (W18), and a
# change that moves none of those pins (most of requirements.txt) leaves them cached. Each pin carries the sha256 of
# its files, so pip installs those bytes or fails naming the package, the file and both digests (W50).
COPY locks/${PAIRING}.stack.lock /opt/slime-image/stack.lock
ENV PIP_CONSTRAINT=/opt/slime-image/stack.lock

# What the builds below compile with (TransformerEngine's torch extension, Megatron-LM's helpers_cpp, the slime
# tree), besides the system compilers. They build --no-build-isolation, with these: an isolated build would take its
# own from the index by name, unchecked (W50), and compile against a folder of random name that the compiled files
# record (a layer would differ every build).
RUN --mount=type=cache,target=/root/.cache/pip,sharing=locked pip install --report /tmp/report.json setuptools wheel ninja \
      pybind11 && python /opt/slime-image/slime_image/pip_reports.py /tmp/report.json build-tools

# torch and its CUDA wheels, in a layer of their own: one layer of all sglang brings would weigh 11 GB, and a node
# pulls a layer as one piece. Named without versions: the lock pins torch and its wheels at what the sglang step
# below resolves, so that step finds them installed and leaves them. In the same step, each wheel library the base
# holds at the same release becomes a link to the base's file, so no layer holds it twice (W46; cuda_once.py).
# Triton's static CUPTI archives (77 MB) are for linking programs against CUPTI: nothing in the image does.
COPY image/slime_image/cuda_once.py /opt/slime-image/slime_image/cuda_once.py
RUN --mount=type=cache,target=/root/.cache/pip,sharing=locked pip install --report /tmp/report.json torch && \
    python /opt/slime-image/slime_image/pip_reports.py /tmp/report.json torch && \
    rm /opt/venv/lib/python3.12/site-packages/triton/backends/nvidia/lib/cupti/*_static.a && \
    python /opt/slime-image/slime_image/cuda_once.py link /opt/venv/lib/python3.12/site-packages

# FlashInfer 0.6.12 requires cuda-tile[tileiras]: cuTile's compiler and the CUDA 13.2 nvcc and nvvm it runs, 0.37 GB
# for one FlashInfer collective (all_gather_matmul) that neither SGLang nor slime calls, and newer than the driver's
# CUDA (W38). Each step that brings them removes them before it ends, so no layer holds them.
ARG UNUSED_DISTRIBUTIONS="nvidia-cuda-tileiras nvidia-cuda-nvcc nvidia-nvvm"

# sglang's GPU kernels, the next 4 GB (sglang-kernel, FlashInfer and its cubins), versions again from the lock.
RUN --mount=type=cache,target=/root/.cache/pip,sharing=locked pip install --report /tmp/report.json sglang-kernel \
      flashinfer-python flashinfer-cubin && \
    python /opt/slime-image/slime_image/pip_reports.py /tmp/report.json kernels && \
    pip uninstall -y ${UNUSED_DISTRIBUTIONS}

# sglang with the extras of its `all` but diffusion, whose st_attn and vsa are CUDA 12 builds (W22) that RL
# never runs: the rest of what it needs, over the torch and kernels above. xgrammar's static archive (65 MB) is for
# C++ programs linking xgrammar; its Python binding is a shared object of its own. The build stops here if torch is
# anything else than the recipe intends.
RUN --mount=type=cache,target=/root/.cache/pip,sharing=locked pip install --report /tmp/report.json \
      "sglang[http2,tracing]==${SGLANG_VERSION}" && \
    python /opt/slime-image/slime_image/pip_reports.py /tmp/report.json sglang && \
    pip uninstall -y ${UNUSED_DISTRIBUTIONS} && \
    rm /opt/venv/lib/python3.12/site-packages/xgrammar/lib/libxgrammar.a && \
    python -c 'import sys, torch; sys.exit(None if torch.__version__ == sys.argv[1] else f"torch is {torch.__version__}, the recipe intends {sys.argv[1]}: a pip step replaced it")' "${TORCH_VERSION}"

# SGLang's JIT kernels that an engine compiles on its first start (nvcc, one after the other: 33 s of the canary's
# first start on an H100, docs/start.md), compiled here for the attention geometry the canary keeps, for each GPU the
# smoke gate targets (its ARCH_TARGETS), into the folder SGLang looks in first; another geometry compiles its own
# there on first use. 1.4 MB; no GPU needed (slime_image/probes/jit_cache.py).
COPY image/slime_image/probes/jit_cache.py /opt/slime-image/probes/jit_cache.py
ENV TVM_FFI_CACHE_DIR=/opt/slime-image/jit-cache
RUN LD_LIBRARY_PATH="/opt/driver-stub:${LD_LIBRARY_PATH}" python /opt/slime-image/probes/jit_cache.py 9.0 10.0 10.3

# TransformerEngine, the version Megatron-LM's own lock at MEGATRON_COMMIT uses. Its GPU kernels come prebuilt
# in transformer_engine_cu13, 0.5 GB of wheels that are the same bytes every build.
RUN --mount=type=cache,target=/root/.cache/pip,sharing=locked pip install --report /tmp/report.json \
      "transformer_engine[core_cu13]==${TRANSFORMER_ENGINE_VERSION}" && \
    python /opt/slime-image/slime_image/pip_reports.py /tmp/report.json transformer-engine

# Its torch extension (C++ only), compiled here against the torch above, in a layer of its own: pip builds it in a
# folder of random name that the compiled file records, so this layer differs from one build to the next and is
# kept to its 2 MB. NVTE_PYTORCH_FORCE_BUILD stops its setup from fetching a prebuilt extension from GitHub instead,
# unlocked (W32). cuDNN's headers are the wheel's, torch's cuDNN (the base has none). Imported with the driver stub,
# so an extension that does not load fails the build (W9, W10). No pip cache here: pip would keep the extension it
# builds and hand it back to a rebuild against another torch (W9).
RUN CPATH=/opt/venv/lib/python3.12/site-packages/nvidia/cudnn/include PIP_NO_CACHE_DIR=1 NVTE_FRAMEWORK=pytorch \
      NVTE_PYTORCH_FORCE_BUILD=TRUE MAX_JOBS="$(nproc)" pip install --no-build-isolation --report /tmp/report.json \
      "transformer_engine[core_cu13,pytorch]==${TRANSFORMER_ENGINE_VERSION}" && \
    python /opt/slime-image/slime_image/pip_reports.py /tmp/report.json transformer-engine-torch && \
    LD_LIBRARY_PATH="/opt/driver-stub:${LD_LIBRARY_PATH}" python -c "import transformer_engine.pytorch"

# apex's fused_weight_gradient_mlp_cuda, the one apex extension Megatron needs beside TransformerEngine: its default
# gradient accumulation fusion raises a RuntimeError at model build without it (W35). Built from apex's own sources
# and flags at the commit slime's image builds (APEX_COMMIT), for 9.0 and 10.0 (which 10.3 runs); the rest of apex's
# --cuda_ext (eleven more extensions, half an hour on a small builder) has a TransformerEngine path in Megatron.
# Without its symbol table and build id, which record the process ids nvcc names its intermediate files after: the
# layer is then the same every build (its exported symbols stay).
RUN git init -q /tmp/apex && git -C /tmp/apex fetch -q --depth 1 "${APEX_REPO_URL}" "${APEX_COMMIT}" && \
    git -C /tmp/apex checkout -q FETCH_HEAD && \
    TORCH_CUDA_ARCH_LIST="9.0;10.0" MAX_JOBS="$(nproc)" env -C /tmp/apex python -c \
      'from setuptools import setup; from torch.utils.cpp_extension import BuildExtension, CUDAExtension; \
      setup(name="fused_weight_gradient_mlp_cuda", cmdclass={"build_ext": BuildExtension}, ext_modules=[CUDAExtension( \
        "fused_weight_gradient_mlp_cuda", include_dirs=["/tmp/apex/csrc"], sources=["csrc/megatron/fused_weight_gradient_dense.cpp", \
        "csrc/megatron/fused_weight_gradient_dense_cuda.cu", "csrc/megatron/fused_weight_gradient_dense_16bit_prec_cuda.cu"], \
        extra_compile_args={"cxx": ["-O3"], "nvcc": ["-O3", "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__", \
        "--expt-relaxed-constexpr", "--expt-extended-lambda", "--use_fast_math"]})])' \
      build_ext --build-lib /opt/venv/lib/python3.12/site-packages && \
    objcopy --strip-unneeded --remove-section=.note.gnu.build-id \
      /opt/venv/lib/python3.12/site-packages/fused_weight_gradient_mlp_cuda.cpython-312-*.so && \
    rm -rf /tmp/apex && \
    LD_LIBRARY_PATH="/opt/driver-stub:${LD_LIBRARY_PATH}" python -c "import torch, fused_weight_gradient_mlp_cuda"

# requirements.txt: numpy<2 for slime's Megatron init assert, the companion pins that keep pip check clean
# after that downgrade, and slime's own runtime dependencies; under the pairing's whole lock from here on. After
# TransformerEngine, so a change here does not rebuild it; every step after this one is --no-deps, so nothing
# brings numpy 2 back (W1).
COPY requirements.txt /opt/slime-image/requirements.txt
COPY locks/${PAIRING}.lock /opt/slime-image/constraints.lock
ENV PIP_CONSTRAINT=/opt/slime-image/constraints.lock
RUN --mount=type=cache,target=/root/.cache/pip,sharing=locked pip install --report /tmp/report.json \
      -r /opt/slime-image/requirements.txt "${KERNELS_REQUIREMENT}" && \
    python /opt/slime-image/slime_image/pip_reports.py /tmp/report.json requirements

# Megatron-LM at the commit slime was released with, --no-deps (its torch, numpy and packaging are met by
# the steps above; the gate's pip-check proves it). The editable install compiles helpers_cpp, which Megatron
# otherwise builds lazily on rank 0 only, so the other nodes fail to import it (W11); it maps megatron.core
# alone, so a .pth puts the checkout on the path for megatron.training, which slime imports (W31). That one commit
# is fetched, not the history (0.12 GB that nothing in the image reads), its objects unpacked (the pack a server
# sends differs from one fetch to the next), and no git index or reflog is kept (they hold the checkout's times):
# `git reset -q` in the checkout makes the index again. The commit names its bytes; no lock applies (PIP_CONSTRAINT=),
# and it builds with the locked build tools above (--no-build-isolation).
RUN --mount=type=cache,target=/root/.cache/pip,sharing=locked git init -q /opt/Megatron-LM && \
    git -C /opt/Megatron-LM -c fetch.unpackLimit=1000000 fetch -q --depth 1 "${MEGATRON_REPO_URL}" "${MEGATRON_COMMIT}" && \
    git -C /opt/Megatron-LM checkout -q FETCH_HEAD && \
    rm -r /opt/Megatron-LM/.git/index /opt/Megatron-LM/.git/logs /opt/Megatron-LM/.git/FETCH_HEAD && \
    PIP_CONSTRAINT='' pip install --no-deps --no-build-isolation --report /tmp/report.json -e /opt/Megatron-LM && \
    python /opt/slime-image/slime_image/pip_reports.py /tmp/report.json megatron-lm && \
    echo /opt/Megatron-LM > /opt/venv/lib/python3.12/site-packages/megatron-lm.pth && \
    LD_LIBRARY_PATH="/opt/driver-stub:${LD_LIBRARY_PATH}" python -c \
      "import megatron.core, megatron.core.extensions.transformer_engine, megatron.training; from megatron.core.datasets import helpers_cpp"

# The SLIME-patched router, slime and mbridge, each --no-deps: slime declares a stock sglang-router and
# a bare numpy, either of which would undo the steps above (W8, W1; the gate's router-slime proves the router
# is the SLIME build). The router wheel is fetched by its sha256 (W50). slime's tag must name the commit it was
# released as, so a moved tag or a mirror's other history fails here (W18); its checkout is kept as Megatron-LM's.
# mbridge must be present because --no-deps never brings it (W7).
RUN --mount=type=cache,target=/root/.cache/pip,sharing=locked python /opt/slime-image/slime_image/fetch.py \
      "${SGL_ROUTER_URL}/${SGL_ROUTER_RELEASE}/sglang_router-${SGL_ROUTER_VERSION}-cp38-abi3-manylinux_2_28_$(uname -m).whl" \
      "${SGL_ROUTER_SHA256}" "/tmp/sgl-router/sglang_router-${SGL_ROUTER_VERSION}-cp38-abi3-manylinux_2_28_$(uname -m).whl" && \
    PIP_CONSTRAINT='' pip install --no-deps --force-reinstall --report /tmp/report.json \
      "/tmp/sgl-router/sglang_router-${SGL_ROUTER_VERSION}-cp38-abi3-manylinux_2_28_$(uname -m).whl" && \
    python /opt/slime-image/slime_image/pip_reports.py /tmp/report.json sgl-router && rm -r /tmp/sgl-router && \
    git init -q /opt/slime && \
    git -C /opt/slime -c fetch.unpackLimit=1000000 fetch -q --depth 1 "${SLIME_REPO_URL}" "${SLIME_REF}" && \
    head=$(git -C /opt/slime rev-parse 'FETCH_HEAD^{commit}') && \
    { [ "$head" = "${SLIME_COMMIT}" ] || { echo "slime ${SLIME_REF} is commit $head, the recipe pins ${SLIME_COMMIT}" >&2; exit 1; }; } && \
    git -C /opt/slime checkout -q "$head" && rm -r /opt/slime/.git/index /opt/slime/.git/logs /opt/slime/.git/FETCH_HEAD && \
    PIP_CONSTRAINT='' pip install --no-deps --no-build-isolation --report /tmp/report.json -e /opt/slime && \
    python /opt/slime-image/slime_image/pip_reports.py /tmp/report.json slime && \
    pip install --no-deps --report /tmp/report.json "mbridge==${MBRIDGE_VERSION}" && \
    python /opt/slime-image/slime_image/pip_reports.py /tmp/report.json mbridge

# The folder EKS's AL2023 and Bottlerocket nodes mount the driver into, which a Debian-family image's loader does not
# search (W45).
RUN echo /usr/lib64 > /etc/ld.so.conf.d/host-driver.conf && ldconfig && rm -f /var/cache/ldconfig/aux-cache

# The image's own code: image/ and nothing else of this repository (standard library only, run by the
# image's Python); its commands (slime-smoke, slime-patch, slime-bytecode, slime-record, slime-launch) go on PATH.
COPY image/ /opt/slime-image/
ENV PATH=/opt/slime-image/bin:${PATH}

# slime's own patches from its tree (docker/patch/<sglang version>/: megatron.patch into Megatron-LM, sglang.patch
# into the installed sglang), without which slime's arguments reach a Megatron that ignores them (W20); then the
# image's self-neutralizing ones on top: CUDA-aware preload selection (W3, W4), a GPU-less Ray head (W12) and
# SGLang's CUDA-graph pool kept across the memory saver's pause (W52).
# A patch that does not apply fails the build here and leaves every tree as it was, and so does a patch folder whose
# files are not the series the pairing declares (file and sha256 prefix, in slime's order): a new upstream patch file
# fails loudly. Declared here, not above, so that a new series reruns only the steps from here on.
ARG SLIME_PATCHES="v0.5.15.post1: megatron.patch@976fd8bbe1f4e386 sglang.patch@4c1b47f52f7a4fd0 sglang-top_p.patch@fdb070bcf9284916 sglang-release_hicache.patch@e70a3dc140806b0a sglang-pull_weights.patch@bca438816b4a9177"
RUN slime-patch --slime-root /opt/slime --megatron-root /opt/Megatron-LM --series "${SLIME_PATCHES}"

# Bytecode for what a job imports, of the patched sources: without it each process of each pod compiles it again at
# every start (PYTHONDONTWRITEBYTECODE=1), 9 s of CPU for slime's path alone; nothing else has any (PIP_COMPILE=0).
RUN LD_LIBRARY_PATH="/opt/driver-stub:${LD_LIBRARY_PATH}" slime-bytecode

# What the image claims to contain (W18): every version ARG and slime's patch files (sha256) in versions.json,
# and the OCI labels below; and the fingerprint of the tree that built it (tools/inputs/fingerprint.py: `make build` passes
# it), which the preflight and `make submit` compare with yours. It changes only when an input does.
ARG IMAGE_INPUTS=unknown
RUN slime-record --out /opt/slime-image/versions.json --slime-root /opt/slime PAIRING BASE_IMAGE EFA_INSTALLER_VERSION PIP_VERSION \
      SGLANG_VERSION TORCH_VERSION TRANSFORMER_ENGINE_VERSION MEGATRON_COMMIT SGL_ROUTER_RELEASE \
      SGL_ROUTER_VERSION SLIME_REF SLIME_COMMIT MBRIDGE_VERSION APEX_COMMIT EFA_INSTALLER_URL SGL_ROUTER_URL \
      MEGATRON_REPO_URL SLIME_REPO_URL APEX_REPO_URL IMAGE_INPUTS

# The image says what it holds in the form scanners read (CycloneDX 1.6): every distribution, Debian package, download
# and source, each by the digest of what the build took (pip's reports, fetch.py's records, the commits, the base).
RUN slime-sbom --out /opt/slime-image/sbom.cdx.json

# Build-time smoke gate: every wall that can be caught without a GPU fails the build here, not minutes into
# a 16-GPU job. The report stays in the image, without the checks' times or the builder's name, so that the layer
# is the same every build.
RUN slime-smoke --stage build --reproducible --json /opt/slime-image/smoke-build.json

# Declared after the last RUN: a build argument's value is part of the cache key of every RUN after its ARG, and
# IMAGE_REVISION changes with each commit, so declared above it would rebuild every layer on every commit.
ARG IMAGE_SOURCE=https://github.com/slime-image/slime-image
ARG IMAGE_REVISION=unknown
LABEL org.opencontainers.image.source="${IMAGE_SOURCE}" \
      org.opencontainers.image.revision="${IMAGE_REVISION}" \
      org.opencontainers.image.version="${SLIME_REF}-sgl${SGLANG_VERSION}" \
      org.opencontainers.image.base.name="${BASE_IMAGE}" \
      org.opencontainers.image.title="slime-image" \
      org.slime-image.pairing="${PAIRING}" \
      org.slime-image.inputs="${IMAGE_INPUTS}"

WORKDIR /opt/slime
