"""`tewatch token`: not written yet."""
