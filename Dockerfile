FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    LITELLM_LOCAL_MODEL_COST_MAP=True \
    PIP_NO_CACHE_DIR=1

RUN useradd --create-home --uid 10001 gateway
WORKDIR /app
COPY pyproject.toml README.md ./
COPY guard ./guard
COPY gateway ./gateway
COPY config ./config
RUN pip install . && mkdir -p /data && chown gateway /data

USER gateway
ENV BIAS_STORE_PATH=/data/scores.db
EXPOSE 8080
CMD ["bias-gateway", "serve", "--config", "config/gateway.yaml", "--host", "0.0.0.0"]
