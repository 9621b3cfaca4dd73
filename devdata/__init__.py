"""Synthetic demo data: realistic raw setup folders for the demo, tests and benchmarks
(marked synthetic; never measurements). The benchcards library never imports it."""
