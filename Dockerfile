# bias-gateway: the gateway on config/gateway.yaml, configured by environment variables.
#
#   docker build -t bias-gateway .
#   docker run -p 8080:8080 -e OPENAI_API_KEY=sk-... -v bias-data:/data bias-gateway
#
# Works on the official python:3.11-slim and on a plain Debian 12 base with python3
# and python3-venv (Python 3.11): everything runs from the venv in /opt/venv, made
# with whichever `python3` the base has. See docs/docker.md.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    LITELLM_LOCAL_MODEL_COST_MAP=True \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH

RUN python3 -m venv /opt/venv \
    && useradd --create-home --uid 10001 gateway \
    && mkdir -p /data \
    && chown gateway /data

# The pinned dependencies first, in a layer of their own: it is rebuilt only when the
# lock changes, not when the code does. The lock holds guard's dependencies and the
# gateway extra's (scripts/lock). --no-deps: the lock is complete (pip check).
WORKDIR /app
COPY requirements/lock.txt requirements/lock.txt
RUN pip install --require-hashes --no-deps -r requirements/lock.txt && pip check

# Then the project itself, without touching the dependencies.
COPY pyproject.toml README.md ./
COPY guard ./guard
COPY gateway ./gateway
COPY config ./config
RUN pip install --no-deps . && pip check

USER gateway
# The store (SQLite) lives in the volume; the path is absolute, so it does not
# depend on the config file's folder.
ENV BIAS_STORE_PATH=/data/scores.db
VOLUME /data
EXPOSE 8080
# No curl in the slim image: the venv's Python asks /readyz (503 while starting or
# draining), on the port the config listens on ($GATEWAY_PORT, 8080 by default).
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python3", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/readyz' % os.environ.get('GATEWAY_PORT', '8080'), timeout=4)"]
CMD ["bias-gateway", "serve", "--config", "config/gateway.yaml", "--host", "0.0.0.0"]
