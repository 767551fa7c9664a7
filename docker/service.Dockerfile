# The tewatch service: API, dashboard and webhook delivery in one process.
# Build from the repository root: docker build -f docker/service.Dockerfile -t tewatch-service .
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY service ./service
COPY dashboards ./dashboards
RUN pip install --no-cache-dir ".[github]"

# SQLite under /data by default; set TEWATCH_DATABASE_URL to a PostgreSQL URL to use that instead.
ENV TEWATCH_DATABASE_URL=sqlite:////data/tewatch.sqlite3
VOLUME /data
EXPOSE 8000
CMD ["tewatch", "serve", "--host", "0.0.0.0", "--port", "8000"]
