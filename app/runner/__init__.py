"""The runner: launches an attempt's server on its host, waits for ready or crash,
benchmarks it, stops it and proves it stopped; every step recorded on the run's row."""
