"""Sources: what to score. A benchmark's logs paired with the environments they replay on (``Scorable`` units)."""
