"""Command-line stage: argument parsing, output files and progress; commands call the library (entry point: nvtxsim.cli.main:main)."""
