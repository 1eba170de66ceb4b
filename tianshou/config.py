"""Global switches of the library."""

ENABLE_VALIDATION = False
"""Run extra consistency checks that cost time, such as scanning freshly collected training data
for NaN values in the trainers (set it to True while debugging an environment or a hook)."""
