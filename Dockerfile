# qadi service image: fetch the locked dependencies and build qadi's wheel in one stage, run
# them in a slim one as a non-root user. requirements.lock pins every runtime dependency with
# hashes (regenerate with `bash deploy/lock.sh`); pip refuses anything that does not match.
# Configuration comes only from QADI_* environment variables and a mounted judges file.
FROM python:3.11.10-slim-bookworm AS build
WORKDIR /src
RUN pip install --no-cache-dir --upgrade pip
COPY requirements.lock ./
RUN pip download --no-cache-dir --require-hashes --only-binary=:all: --dest /wheels \
    -r requirements.lock
COPY pyproject.toml README.md ./
COPY rubrics rubrics
COPY judges judges
COPY calibration calibration
COPY benchmarks benchmarks
COPY service service
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /qadi .

FROM python:3.11.10-slim-bookworm AS runtime
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    LITELLM_LOCAL_MODEL_COST_MAP=True \
    QADI_DATABASE_URL=sqlite:////data/qadi.db
RUN useradd --create-home --uid 10001 qadi \
    && mkdir -p /data /reports /config \
    && chown qadi:qadi /data /reports
COPY --from=build /wheels /wheels
COPY --from=build /qadi /qadi
COPY requirements.lock /tmp/requirements.lock
# the locked versions, hash-checked, from the wheels fetched above; then qadi itself
RUN pip install --no-cache-dir --no-index --find-links /wheels --require-hashes \
        -r /tmp/requirements.lock \
    && pip install --no-cache-dir --no-index --no-deps /qadi/*.whl \
    && rm -rf /wheels /qadi /tmp/requirements.lock
# migrations live at the top of the source tree (alembic/), outside the wheel
COPY alembic /opt/qadi/alembic
COPY deploy/entrypoint.py /opt/qadi/entrypoint.py
ENV QADI_MIGRATIONS_DIR=/opt/qadi/alembic
USER qadi
WORKDIR /home/qadi
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('QADI_PORT', '8000'), timeout=4)"]
# QADI_DB_* parts, when given, become an escaped QADI_DATABASE_URL (deploy/entrypoint.py).
ENTRYPOINT ["python", "/opt/qadi/entrypoint.py"]
# Serve only: migrations run once, in compose's one-shot `migrate` service (`qadi db upgrade`),
# never on every start of every replica. Override QADI_PORT / QADI_WORKERS in the environment.
CMD ["sh", "-c", "exec qadi serve --host 0.0.0.0 --port ${QADI_PORT:-8000} --workers ${QADI_WORKERS:-2}"]
