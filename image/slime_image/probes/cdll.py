"""Load one shared library with the dynamic loader, as LD_PRELOAD would; exit 0 when it loads.

cdll.py LIBRARY
"""

import ctypes
import sys

ctypes.CDLL(sys.argv[1])
