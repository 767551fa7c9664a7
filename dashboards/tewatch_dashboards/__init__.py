"""The web dashboard: HTML pages over the store, served by the service's FastAPI app."""
