# syntax=docker/dockerfile:1
# Build stage: a wheel and its dependencies, compiled where needed.
FROM python:3.11-slim AS build
WORKDIR /src
RUN pip install --no-cache-dir --upgrade pip build
COPY pyproject.toml README.md ./
COPY core core
COPY bot bot
COPY tui tui
COPY migrations migrations
RUN python -m build --wheel --outdir /dist . \
 && pip wheel --no-cache-dir --wheel-dir /dist /dist/*.whl

# Runtime stage: only the installed wheels, run as an unprivileged user.
FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    HERALD_HTTP_HOST=0.0.0.0 \
    HERALD_HTTP_PORT=8080
COPY --from=build /dist /dist
RUN pip install --no-index --find-links=/dist herald \
 && rm -rf /dist \
 && useradd --create-home --uid 10001 herald
USER herald
WORKDIR /home/herald
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=4).status == 200 else 1)"
ENTRYPOINT ["herald"]
CMD ["run"]
