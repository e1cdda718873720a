# syntax=docker/dockerfile:1
# SLIME (RL post-training: SGLang rollouts, Megatron-LM training, Ray) for EKS on H200 and B300, CUDA 13.
# Every ARG below that names a version is the single source of truth for it: the Makefile's tag, the
# README's version table, /opt/slime-image/versions.json and the tests all read these lines
# (tools/versions.py on the host, slime-record in the build). Pin the base by digest in production: --build-arg BASE_IMAGE=nvcr.io/...@sha256:...

# Base: NGC PyTorch (CUDA 13, Python 3.12, cuDNN, NCCL, toolchain to build TransformerEngine).
ARG BASE_IMAGE=nvcr.io/nvidia/pytorch:26.02-py3
FROM ${BASE_IMAGE}

ARG BASE_IMAGE
ARG EFA_INSTALLER_VERSION=1.43.2
ARG MEGATRON_COMMIT=1dcf0dafa884ad52ffb243625717a3471643e087
ARG SGLANG_VERSION=0.5.12.post1
ARG TORCH_VERSION=2.11.0+cu130
ARG TRANSFORMER_ENGINE_VERSION=2.12.0
ARG SGL_ROUTER_RELEASE=v0.3.2-5f8d397
ARG SGL_ROUTER_VERSION=0.3.2
ARG SLIME_REF=v0.3.0
ARG MBRIDGE_VERSION=0.15.1
ARG IMAGE_SOURCE=https://github.com/slime-image/slime-image
ARG IMAGE_REVISION=unknown

SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV DEBIAN_FRONTEND=noninteractive \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

# The base's pip constraint file pins the NGC torch, which sglang cannot use (see the sglang layer):
# keep a copy for the record and empty it, or every later resolve ends in ResolutionImpossible.
RUN mkdir -p /opt/slime-image && \
    if [ -f /etc/pip/constraint.txt ]; then \
      cp /etc/pip/constraint.txt /opt/slime-image/base-pip-constraint.txt && : > /etc/pip/constraint.txt; \
    fi

# constraints.lock, written by `make lock` from the plan of this file: every pip step below installs the
# versions that were planned and checked, so a rebuild next month installs the same set (W18).
COPY constraints.lock /opt/slime-image/constraints.lock
ENV PIP_CONSTRAINT=/opt/slime-image/constraints.lock

# System and EFA: without libfabric and aws-ofi-nccl on the loader path NCCL silently falls back to
# TCP sockets on EKS (W13). No SSH server: Ray on Kubernetes does not use it, and a key baked in at
# build time would be shared by every pod. GDRCopy is left out: it needs the gdrdrv kernel module on
# the host, and aws-ofi-nccl runs without it.
RUN apt-get update && \
    apt-get install -y --no-install-recommends curl ca-certificates git pciutils environment-modules libhwloc-dev && \
    curl -fsSL "https://efa-installer.amazonaws.com/aws-efa-installer-${EFA_INSTALLER_VERSION}.tar.gz" | tar -xz -C /tmp && \
    env -C /tmp/aws-efa-installer ./efa_installer.sh -y --skip-kmod --skip-limit-conf --no-verify && \
    rm -rf /tmp/aws-efa-installer /var/lib/apt/lists/*
# Written out in full rather than appended to the base's value, which lists /usr/local/cuda/compat/lib:
# the forward-compat libcuda ahead of a newer host driver gives CUDA error 803 (W14).
ENV LD_LIBRARY_PATH=/opt/amazon/ofi-nccl/lib:/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu:/opt/amazon/efa/lib:/usr/local/cuda/lib64:/usr/local/nvidia/lib:/usr/local/nvidia/lib64

# Megatron-LM at the commit slime was released with; helpers_cpp is compiled here because Megatron
# otherwise builds it lazily on rank 0 only and the other nodes fail to import it (W11).
ENV PYTHONPATH=/opt/Megatron-LM
RUN git clone --filter=blob:none https://github.com/NVIDIA/Megatron-LM.git /opt/Megatron-LM && \
    git -C /opt/Megatron-LM checkout "${MEGATRON_COMMIT}" && \
    pip install -e /opt/Megatron-LM && \
    make -C /opt/Megatron-LM/megatron/core/datasets && \
    python3 -c "from megatron.core.datasets import helpers_cpp"

# sglang[all]: it pins torch==2.11.0, which the NGC build 2.11.0a0+<hash> does not satisfy (PEP 440
# pre-release), and its kernels (sglang-kernel, flashinfer) are built against the PyPI torch. The recipe
# therefore takes the PyPI torch deliberately, and first removes the base's extensions compiled against
# the NGC torch that nothing here needs (they would fail with undefined c10 symbols, W9); the one slime
# needs, TransformerEngine, is rebuilt against the new torch in the same layer. The build fails here if
# torch ends up anything other than TORCH_VERSION.
RUN pip uninstall -y flash_attn apex torch_tensorrt nvfuser transformer_engine transformer_engine_torch \
      transformer_engine_cu12 transformer_engine_cu13 && \
    pip install "sglang[all]==${SGLANG_VERSION}" && \
    NVTE_FRAMEWORK=pytorch MAX_JOBS="$(nproc)" pip install --no-build-isolation \
      "transformer_engine[core_cu13,pytorch]==${TRANSFORMER_ENGINE_VERSION}" && \
    python3 -c 'import sys, torch; sys.exit(None if torch.__version__ == sys.argv[1] else f"torch is {torch.__version__}, the recipe intends {sys.argv[1]}: a pip step replaced it")' "${TORCH_VERSION}"

# requirements.txt: numpy<2 for slime's Megatron init assert, the companion pins that keep pip check
# clean after that downgrade, and slime's own runtime dependencies (slime itself goes in with --no-deps).
COPY requirements.txt /opt/slime-image/requirements.txt
RUN pip install -r /opt/slime-image/requirements.txt

# The SLIME-patched router, slime and mbridge, each --no-deps: slime declares a stock sglang-router and
# a bare numpy, either of which would undo the steps above (W8, W1). mbridge must be present because
# --no-deps never brings it (W7).
RUN pip install --no-deps --force-reinstall \
      "https://github.com/zhuzilin/sgl-router/releases/download/${SGL_ROUTER_RELEASE}/sglang_router-${SGL_ROUTER_VERSION}-cp38-abi3-manylinux_2_28_$(uname -m).whl" && \
    python3 -c 'import sys, sglang_router as r; sys.exit(None if "slime" in r.__version__ else f"sglang_router {r.__version__} is not the SLIME build")' && \
    git clone --depth 1 --branch "${SLIME_REF}" https://github.com/THUDM/slime.git /opt/slime && \
    pip install --no-deps -e /opt/slime && \
    pip install --no-deps "mbridge==${MBRIDGE_VERSION}"

# The image's own code: image/ and nothing else of this repository (standard library only, run by the
# image's Python); its commands (slime-smoke, slime-patch, slime-record, slime-launch) go on PATH.
COPY image/ /opt/slime-image/
ENV PATH=/opt/slime-image/bin:${PATH}

# slime's self-neutralizing patches: CUDA-aware preload selection (W3, W4) and a GPU-less Ray head (W12).
# Each reports not-needed once upstream fixes its defect; an unknown source shape fails the build here.
RUN slime-patch --slime-root /opt/slime --megatron-root /opt/Megatron-LM

# What the image claims to contain (W18): every version ARG in versions.json, and the OCI labels below.
RUN slime-record --out /opt/slime-image/versions.json BASE_IMAGE EFA_INSTALLER_VERSION MEGATRON_COMMIT \
      SGLANG_VERSION TORCH_VERSION TRANSFORMER_ENGINE_VERSION SGL_ROUTER_RELEASE SGL_ROUTER_VERSION SLIME_REF \
      MBRIDGE_VERSION

# Build-time smoke gate: every wall that can be caught without a GPU fails the build here, not minutes into
# a 16-GPU job. The report stays in the image.
RUN slime-smoke --stage build --json /opt/slime-image/smoke-build.json

LABEL org.opencontainers.image.source="${IMAGE_SOURCE}" \
      org.opencontainers.image.revision="${IMAGE_REVISION}" \
      org.opencontainers.image.version="${SLIME_REF}-sgl${SGLANG_VERSION}" \
      org.opencontainers.image.base.name="${BASE_IMAGE}" \
      org.opencontainers.image.title="slime-image"

WORKDIR /opt/slime
