"""Tests only: install the Kit stand-ins at interpreter start when NVTXSIM_TEST_KIT_STUBS is set.

On PYTHONPATH for Isaac Lab 2.3 subprocesses, so every process (including one started
by ``nsys profile`` or ``python -m nvtxsim run``) sees the stand-ins before any
Isaac Lab import, as a Kit process would see the real modules.
"""

import os
import sys

if os.environ.get("NVTXSIM_TEST_KIT_STUBS"):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import kit_stubs

    kit_stubs.install()
