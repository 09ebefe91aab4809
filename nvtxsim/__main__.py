import sys

from nvtxsim.cli.main import main

sys.exit(main())
