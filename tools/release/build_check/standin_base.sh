#!/usr/bin/env bash
# Assemble a local stand-in for nvidia/cuda:13.0.2-devel-ubuntu24.04 and commit it with buildah as $1.
# Run as root on a Debian machine with debootstrap, buildah, gcc, the CUDA 13.0 toolkit at /usr/local/cuda-13.0
# and Python 3.12 under pyenv. Every way this differs from the real base is listed in tools/release/build_check/standins.py;
# the verification build copies that list into its record.
set -euo pipefail
tag=$1 work=$2 lock=$3 label=$4
rootfs=$work/rootfs wheels=$work/base-wheels
py=$(pyenv root)/versions/3.12.1
cuda=/usr/local/cuda-13.0
pin() { grep -E "^$1==" "$lock" | head -1 | cut -d' ' -f1; }  # the pin, not its hash lines

rm -rf "$rootfs" && mkdir -p "$rootfs" "$wheels"
echo "stand-in base: debootstrap bookworm"
debootstrap --variant=minbase --include=ca-certificates,curl,gnupg bookworm "$rootfs" http://deb.debian.org/debian >"$work/debootstrap.log"

echo "stand-in base: Python 3.12 at its own prefix, with empty python3.12{,-dev,-venv} packages for the recipe's apt line"
mkdir -p "$rootfs$(dirname "$py")"
cp -a "$py" "$rootfs$py"
rm -rf "$rootfs$py"/lib/python3.12/site-packages/{pip,pip-*} "$rootfs$py"/lib/python3.12/site-packages/*.pth
find "$rootfs$py" -name __pycache__ -prune -exec rm -rf {} +
ln -sf "$py/bin/python3.12" "$rootfs/usr/bin/python3.12"
ln -sf "$py/bin/python3.12-config" "$rootfs/usr/bin/python3.12-config"
for name in python3.12 python3.12-dev python3.12-venv; do
  deb=$work/debs/$name && mkdir -p "$deb/DEBIAN"
  printf 'Package: %s\nVersion: 3.12.1-0standin\nArchitecture: amd64\nMaintainer: slime-image build-check <none>\nDescription: stand-in: Python 3.12.1 is copied into the stand-in base\n' \
    "$name" >"$deb/DEBIAN/control"
  dpkg-deb --build "$deb" "$rootfs/tmp/$name.deb" >/dev/null
done
chroot "$rootfs" sh -c 'dpkg -i /tmp/python3.12*.deb >/dev/null && rm /tmp/python3.12*.deb'

echo "stand-in base: CUDA 13.0.2 toolkit, its math libraries and NCCL from PyPI wheels at the lock's versions, no cuDNN"
"$py/bin/python3" -m pip download -q --no-deps --only-binary=:all: -d "$wheels" \
  "$(pin nvidia-cublas)" "$(pin nvidia-cufft)" "$(pin nvidia-curand)" "$(pin nvidia-cusolver)" "$(pin nvidia-cusparse)" \
  "$(pin nvidia-nvjitlink)" "$(pin nvidia-cuda-nvrtc)" "$(pin nvidia-nccl-cu13)" nvidia-cuda-cuobjdump==13.2.51
cp -a "$cuda" "$rootfs/usr/local/"
target=$rootfs/usr/local/cuda-13.0/targets/x86_64-linux
# Each library under its real name, as the toolkit's packages install it (libcublas.so.13.1.0.3, then the soname and
# the development link): the torch step reads a base library's release from that name (image/slime_image/cuda_once.py).
place() {  # place FILE FOLDER VERSION
  local name real; name=$(basename "$1"); real=${name%%.so.*}.so.$3
  cp -a "$1" "$2/$real" && ln -sfn "$real" "$2/$name" && ln -sfn "$name" "$2/${name%%.so.*}.so"
}
shopt -s nullglob
for w in "$wheels"/*.whl; do
  version=$(basename "$w" | cut -d- -f2) unpacked=$work/unpacked/$(basename "$w" .whl)
  rm -rf "$unpacked" && python3 -m zipfile -e "$w" "$unpacked"
  for f in "$unpacked"/nvidia/cu13/lib/lib*.so.*; do place "$f" "$target/lib" "$version"; done
  for f in "$unpacked"/nvidia/nccl/lib/lib*.so.*; do place "$f" "$rootfs/usr/lib/x86_64-linux-gnu" "$version"; done
  [ -d "$unpacked/nvidia/cu13/include" ] && cp -a "$unpacked"/nvidia/cu13/include/. "$target/include/"
  [ -d "$unpacked/nvidia/nccl/include" ] && cp -a "$unpacked"/nvidia/nccl/include/. "$rootfs/usr/include/"
  [ -f "$unpacked/nvidia/cu13/bin/cuobjdump" ] && install -m 0755 "$unpacked/nvidia/cu13/bin/cuobjdump" "$rootfs/usr/local/cuda-13.0/bin/cuobjdump"
done
shopt -u nullglob
# This machine's toolkit is its PyPI components, which put libnvvm beside the other libraries; the toolkit's packages
# install it under nvvm/lib64, where the loader does not look (nvcc finds it there).
mkdir -p "$rootfs/usr/local/cuda-13.0/nvvm/lib64" && mv "$rootfs"/usr/local/cuda-13.0/lib/libnvvm.so* "$rootfs/usr/local/cuda-13.0/nvvm/lib64/"
# This machine's toolkit holds its own libraries under their sonames: give them their real names too, from its record.
for part in cuda_runtime:libcudart.so.13 cuda_cupti:libcupti.so.13; do
  version=$(basename "$cuda"/dist-info/nvidia_"${part%%:*}"-*.dist-info .dist-info | cut -d- -f2)
  rm "$target/lib/${part#*:}" && cp -a "$cuda/targets/x86_64-linux/lib/${part#*:}" "$work/${part#*:}" && \
    place "$work/${part#*:}" "$target/lib" "$version"
done

echo "stand-in base: the driver stub (every cu* entry point of cuda.h returns CUDA_ERROR_STUB_LIBRARY)"
mkdir -p "$target/lib/stubs"
gcc -E -P -I"$target/include" "$target/include/cuda.h" | grep -oE '\bcu[A-Z][A-Za-z0-9_]*\s*\(' | tr -d ' (' >"$work/stub-symbols"
grep -oE '#define\s+cu[A-Z][A-Za-z0-9_]*\s+cu[A-Z][A-Za-z0-9_]*' "$target/include/cuda.h" | awk '{print $2; print $3}' >>"$work/stub-symbols"
sort -u "$work/stub-symbols" | awk '{print "int " $1 "(void) { return 34; }"}' >"$work/libcuda_stub.c"
gcc -shared -fPIC -O1 -Wl,-soname,libcuda.so.1 -o "$target/lib/stubs/libcuda.so" "$work/libcuda_stub.c"
( cd "$rootfs/usr/local" && ln -sfn cuda-13.0 cuda-13 && ln -sfn cuda-13.0 cuda )

echo "stand-in base: loader configuration as in the CUDA images, this host's CA certificates"
echo /usr/local/cuda-13/targets/x86_64-linux/lib >"$rootfs/etc/ld.so.conf.d/988_cuda-13.conf"
printf '/usr/local/nvidia/lib\n/usr/local/nvidia/lib64\n' >"$rootfs/etc/ld.so.conf.d/000_nvidia.conf"
cp /usr/local/share/ca-certificates/*.crt "$rootfs/usr/local/share/ca-certificates/" 2>/dev/null || true
chroot "$rootfs" update-ca-certificates >/dev/null
chroot "$rootfs" ldconfig
chroot "$rootfs" /usr/bin/python3.12 -c 'import ssl, ctypes, sqlite3, lzma, bz2, zlib, venv, ensurepip'
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*

echo "stand-in base: commit $tag"
ctr=$(buildah from scratch)
mnt=$(buildah mount "$ctr")
cp -a "$rootfs"/. "$mnt"/
buildah umount "$ctr" >/dev/null
buildah config \
  --env PATH=/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env LD_LIBRARY_PATH=/usr/local/nvidia/lib:/usr/local/nvidia/lib64 \
  --env LIBRARY_PATH=/usr/local/cuda/lib64/stubs \
  --env CUDA_VERSION=13.0.2 --env NVIDIA_VISIBLE_DEVICES=all --env NVIDIA_DRIVER_CAPABILITIES=compute,utility \
  --env PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
  --label "org.slime-image.standin=$label" "$ctr"
buildah commit --format docker --rm "$ctr" "$tag" >/dev/null
rm -rf "$rootfs" "$work/unpacked"
echo "stand-in base: $tag committed"
