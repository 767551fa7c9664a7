"""Reads of the store as typed rows or plain dicts, for the API, the pages, detection and the CLI alike.
Nothing here writes."""
