"""`tewatch detect`: not written yet."""
