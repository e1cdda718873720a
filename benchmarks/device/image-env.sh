# Sourced by the device scripts, after the staging (canary-stage.sh here, device_setup.sh there): the image's PATH and
# loader path over the staged environment, the device's rule of no NVLink multicast, apex's extension in place, and
# this checkout's image/ in place of the staged one (the stack stays the built image's; its versions.json and
# SGLang's JIT kernels are kept).
image=/opt/slime-image  # where the staging linked the image's own tree, as the image has it
export PATH=$image/bin:/tmp/venv/bin:/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/nvidia/lib64
export TVM_FFI_CACHE_DIR=$image/jit-cache  # the image's ENV: SGLang's JIT kernels built into it
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cp .stage/fused_weight_gradient_mlp_cuda*.so /tmp/venv/lib/python3.12/site-packages/
[ -d /tmp/ovl/slime-image-built ] || mv /tmp/ovl/slime-image /tmp/ovl/slime-image-built
rm -rf /tmp/ovl/slime-image && cp -r image /tmp/ovl/slime-image
cp /tmp/ovl/slime-image-built/versions.json /tmp/ovl/slime-image/
[ ! -d /tmp/ovl/slime-image-built/jit-cache ] || cp -r /tmp/ovl/slime-image-built/jit-cache /tmp/ovl/slime-image/
