#!/usr/bin/env bash
# slime-p2p (send/recv, then the 1 GiB broadcast) on one host with two GPUs, run as the preflight runs it on two
# one-GPU nodes: each node's slime-p2p in a mount namespace whose /dev holds only its own GPU's device file (as the
# NVIDIA runtime gives a pod its GPU), and NCCL told the two are different hosts (NCCL_HOSTID), so the ranks meet
# through NCCL's network transport, not NVLink. No EFA here: the sockets transport stands in for the network.
#   OUT=folder bash benchmarks/device/p2p-two-gpus-run.sh
set -u
out=${OUT:-/tmp/p2p}
mkdir -p "$out"
nvidia-smi --query-gpu=index,name,pci.bus_id --format=csv > "$out/gpus.csv"
python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())' > "$out/versions.txt"
ls /dev/nvidia* >> "$out/versions.txt"
export PYTHONPATH=$PWD/image PYTHONUNBUFFERED=1 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1

node() {  # $1: the node's index, $2: the minor number of the GPU it holds, $3: its JSON report
  unshare -m bash -s "$1" "$2" "$3" <<'NODE'
set -e
private=$(mktemp -d)
mount -t tmpfs tmpfs "$private"
cp -a /dev/. "$private"/ 2>/dev/null || true
for file in "$private"/nvidia[0-9]*; do [ "${file##*/}" = "nvidia$2" ] || rm -f "$file"; done
mount --bind /dev/shm "$private/shm"
mount --bind "$private" /dev
echo "node $1 sees: $(ls /dev/nvidia[0-9]*)"
export NCCL_HOSTID="slime-p2p-node-$1"
exec python3 -c 'import sys; from slime_image.p2p import main; sys.exit(main(sys.argv[1:]))' \
  --node "$1" --master 127.0.0.1 --port 29600 --json "$3"
NODE
}

gpus=($(ls /dev/nvidia[0-9]* | sed 's|/dev/nvidia||' | sort -n))
start=$(date +%s)
node 0 "${gpus[0]}" "$out/node0.json" > "$out/node0.log" 2>&1 &
zero=$!
node 1 "${gpus[1]}" "$out/node1.json" > "$out/node1.log" 2>&1
one=$?
wait $zero
zero=$?
echo "node 0 exit $zero, node 1 exit $one, $(( $(date +%s) - start )) s" | tee "$out/summary.txt"
tail -n 30 "$out/node0.log" "$out/node1.log"
