"""Figures made from figures: the summary of a contract's records, build timelines, the analysis across setups,
sweeps. Imports read and domain."""
