"""Stage 2, linking: resolve hosts the way the cluster does and join clients ->
poolers -> servers into one topology."""
