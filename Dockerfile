# The web app and its workers: one image, the command picks the role (docker-compose.yml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    DJANGO_SETTINGS_MODULE=config.settings.production \
    LAB_VAR_DIR=/app/var

WORKDIR /app
COPY . .
RUN pip install -e . \
    && SECRET_KEY="$(python -c 'import secrets; print(secrets.token_urlsafe(50))')" DATABASE_URL=sqlite:////tmp/build.sqlite3 \
       python manage.py collectstatic --noinput \
    && useradd --create-home --uid 10001 lab \
    && mkdir -p /app/var && chown -R lab /app/var

USER lab
EXPOSE 8000
# Static files are served by the app itself (WhiteNoise): no separate web server needed.
# Keep-alive 30 s: gunicorn's 2 s default closes idle connections that clients (a
# notebook's session, a browser) are about to reuse, and they see a reset.
CMD ["gunicorn", "config.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3", "--threads", "4", \
     "--keep-alive", "30", "--access-logfile", "-"]
