"""`tewatch db`: not written yet."""
