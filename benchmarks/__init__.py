"""autodist benchmarks: ratios measured side by side in one run. See run.py."""
