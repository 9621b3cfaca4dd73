"""What a figure is and how it is written: the metric registry, the formatter, statistics, tiers, flags,
plausibility bounds, the exception tree. Imports nothing else of benchcards."""
