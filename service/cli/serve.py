"""`tewatch serve`: not written yet."""
