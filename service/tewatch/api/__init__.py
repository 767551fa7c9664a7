"""The HTTP API: `create_app` in app.py, thin routes in routes/."""
