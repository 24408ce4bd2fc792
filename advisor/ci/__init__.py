"""Continuous integration: the pull-request comment kept up to date (comment) and
the budget of the base revision to compare with (basecheck)."""
