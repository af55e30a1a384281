"""gpuhost's version: one place, read by the package and by the compile cache's keys."""
__version__ = "0.1.0"
