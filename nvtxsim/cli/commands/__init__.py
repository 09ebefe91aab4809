"""CLI commands, one module each (see nvtxsim.cli.main)."""
