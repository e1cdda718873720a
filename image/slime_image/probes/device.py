"""The CUDA devices torch sees, with torch's CUDA version, arch list and NCCL version."""

import json

import torch

if not torch.cuda.is_available():
    print(json.dumps({"available": False, "torch": torch.__version__}))
else:
    devices = [
        [torch.cuda.get_device_name(i), list(torch.cuda.get_device_capability(i))]
        for i in range(torch.cuda.device_count())
    ]
    print(
        json.dumps(
            {
                "available": True,
                "torch": torch.__version__,
                "cuda": torch.version.cuda,
                "arch_list": torch.cuda.get_arch_list(),
                "nccl": ".".join(map(str, torch.cuda.nccl.version())),
                "devices": devices,
            }
        )
    )
