#!/usr/bin/env bash
# On the device machine, after the staging: the upstreams' own tests on the GPU in the image's stack, one suite a call
# (a call lasts 10 minutes at most). `slime`: slime's unit tests (slime-upstream-tests: the files that need no model,
# data or network; here their CUDA tests run), each file bounded at 120 s. `megatron`: a one-rank selection of
# Megatron-LM's unit tests at the pinned commit (the tree the image holds). pytest comes from .stage/test-runner
# (pip install --target, as the verification build mounts it). Record: docs/h200/upstream-tests/.
set -u
. "$(dirname "$0")/image-env.sh"
runner=$PWD/.stage/test-runner
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
case "${1:?slime or megatron}" in
  slime)
    timeout 560 slime-upstream-tests --runner "$runner" --timeout 120 --junit "$OUT/slime-gpu.junit.xml" \
      --json "$OUT/slime-gpu.json" > "$OUT/slime-gpu.txt" 2>&1; echo "slime: exit $?"; tail -1 "$OUT/slime-gpu.txt"
    echo "torch_memory_saver's examples in the image: $(find /tmp/venv/lib/python3.12/site-packages \
      -path '*torch_memory_saver*' -name '*example*' | wc -l) files" ;;
  megatron)
    # One rank, under torchrun as Megatron's CI launches them; the files whose tests build layers with one GPU's
    # parallelism. pytest goes after the stack on the path, as slime-upstream-tests puts it. Megatron's pytest options
    # stop at the first failure (-x); --maxfail after them lets the rest run past a test that needs 4 or 8 ranks.
    boot="import sys; sys.path.append('$runner'); import pytest; sys.exit(pytest.main(sys.argv[1:]))"
    cd /opt/Megatron-LM && timeout 500 torchrun --nproc-per-node 1 --no-python python3 -c "$boot" -q \
      -p no:cacheprovider --maxfail=1000 -o junit_family=xunit1 --junitxml="$OUT/megatron.junit.xml" \
      --continue-on-collection-errors \
      tests/unit_tests/fusions/test_bias_dropout_fusion.py tests/unit_tests/fusions/test_swiglu_fusion.py \
      tests/unit_tests/fusions/test_torch_softmax.py tests/unit_tests/transformer/test_mlp.py \
      tests/unit_tests/transformer/test_attention.py tests/unit_tests/transformer/test_rope.py \
      tests/unit_tests/transformer/test_transformer_layer.py tests/unit_tests/transformer/test_core_attention.py \
      > "$OUT/megatron.txt" 2>&1; echo "megatron: exit $?"; tail -3 "$OUT/megatron.txt" ;;
esac
