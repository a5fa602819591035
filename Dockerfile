FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY core core
COPY bot bot
COPY tui tui
COPY migrations migrations
RUN pip install --no-cache-dir . && useradd --create-home herald
USER herald
ENTRYPOINT []
CMD ["herald", "--help"]
