"""torch.__version__ and torch.version.cuda (reading them does not initialise CUDA)."""

import json

import torch

print(json.dumps([torch.__version__, torch.version.cuda]))
