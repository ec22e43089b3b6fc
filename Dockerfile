# Yuxi Memory: the API, the web UI and workers from one image. See compose.yaml for a
# PostgreSQL 17 deployment; `tests/unit/test_container.py` checks this file.
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# A fixed, unprivileged user: files it writes on the data volume keep one owner across upgrades.
RUN groupadd --system --gid 10001 yuxi \
    && useradd --system --uid 10001 --gid yuxi --home-dir /home/yuxi --create-home \
       --shell /usr/sbin/nologin yuxi

# The serve lock first (exact versions with hashes: the same packages on every build), then the
# project alone, built with the lock's setuptools. The lock layer is cached until the lock changes.
WORKDIR /app
COPY requirements/serve.txt ./requirements/serve.txt
RUN pip install --require-hashes -r requirements/serve.txt
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install --no-deps --no-build-isolation . && rm -rf /app/src

# The data directory: user workspaces (and, without YUXI_DATABASE_URL, the embedded PostgreSQL).
# Created and owned by yuxi before VOLUME, so a fresh named volume starts with that owner.
RUN mkdir -p /data && chown yuxi:yuxi /data && chmod 0700 /data
VOLUME ["/data"]

ENV YUXI_DATA_DIR=/data \
    YUXI_HOST=0.0.0.0 \
    YUXI_PORT=8000

USER yuxi
WORKDIR /home/yuxi
EXPOSE 8000
CMD ["yuxi", "serve"]
