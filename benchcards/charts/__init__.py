"""Altair specs for the views: the charts the app and the export draw."""
