"""Command-line stage: argument parsing, output files and progress; commands call the library."""

from nvtxsim.cli.main import main

__all__ = ["main"]
