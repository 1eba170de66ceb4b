"""Converters between numpy, torch and HDF5, and the segment tree used by prioritized replay."""
