import os
import sys

# A report does no BLAS work: keep OpenBLAS from starting a thread per core at import.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from .cli import main  # noqa: E402

sys.exit(main())
