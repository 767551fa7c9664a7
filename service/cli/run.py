"""`tewatch run`: not written yet."""
