"""`tewatch campaign`: not written yet."""
