"""prefix-exec."""
