"""Herald's benchmarks. Run them with `make bench` (or `python -m bench`)."""
