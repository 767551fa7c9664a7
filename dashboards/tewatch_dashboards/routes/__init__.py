"""The dashboard's page routes, one module per page family."""
