"""tracekit: measure the framework tax of deep-learning inference from profiler traces."""

__version__ = "0.1.0"
