"""What the API and the pages share per request: the database, read access and parameter types."""
