#!/usr/bin/env bash
# On the device machine, from the checkout's root, once every part is in /tmp/stage (recv.sh): the export unpacked
# into /tmp/ovl, a venv of the device's Python 3.12 holding it, a view of the device's own distributions the export
# left out (device_view.py), and the image's /opt trees linked where the image has them.
set -euo pipefail
D=${STAGE_DIR:-.stage}  # the carried folder: zstd, device-pip.json, this folder's scripts
here=$(dirname "$0")
mkdir -p /tmp/ovl && cat /tmp/stage/part-* | "$D/zstd" -d --long=27 -q | tar -x -C /tmp/ovl
device=/opt/torch/.venv/lib/python3.12/site-packages
"$(/opt/torch/.venv/bin/python3 -c 'import sys; print(sys.base_prefix)')/bin/python3" -m venv --without-pip /tmp/venv
site=/tmp/venv/lib/python3.12/site-packages
cp -a /tmp/ovl/site-packages/. "$site/" && rm -f "$site/distutils-precedence.pth"
python3 "$here/device_view.py" "$device" "$site" "$D/device-pip.json" /tmp/devsite
echo "import site; site.addsitedir('/tmp/devsite')" > "$site/zz-device-view.pth"
for tree in Megatron-LM slime slime-image; do ln -sfn "/tmp/ovl/$tree" "/opt/$tree"; done
# The image's torch step makes each CUDA wheel library a link to the base's file of the same release (cuda_once.py,
# W46): the same over the device's wheels (the view's links) and the device's toolkit, where the loader finds it.
LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/nvidia/lib64 /tmp/venv/bin/python3 \
  /opt/slime-image/slime_image/cuda_once.py link /tmp/devsite
/tmp/venv/bin/python3 -c 'import sys, torch, numpy; print(sys.version.split()[0], torch.__version__, numpy.__version__, torch.cuda.is_available())'
