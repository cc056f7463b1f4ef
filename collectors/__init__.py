"""Collection: model zoo, runtime adapters, profiler drivers and the sweep/timing harness."""
