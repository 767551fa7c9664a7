"""`tewatch upload`: not written yet."""
