# The production image: one stateless server process; PostgreSQL comes from DATABASE_URL.
# (Without DATABASE_URL it would start the embedded database inside the container, which
# suits a demo, not a deployment: state would die with the container.)
FROM python:3.11-slim-bookworm

# HOST=0.0.0.0 is a public bind: `avagenc serve` refuses local sign-in there unless the
# deployment sets LOCAL_SIGN_IN_ON_PUBLIC_BIND=true itself (docs/http.md#authentication);
# the image never does.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOST=0.0.0.0 \
    PORT=8080 \
    AVAGENC_HOME=/var/lib/avagenc

# espeak-ng speaks for the offline voice; the rest of the product is pure Python wheels.
RUN apt-get update \
    && apt-get install -y --no-install-recommends espeak-ng \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY requirements.lock pyproject.toml ./
RUN pip install --no-cache-dir uv==0.13.8 \
    && uv pip install --system --no-cache --require-hashes -r requirements.lock
COPY . .
RUN uv pip install --system --no-cache --no-deps . \
    && useradd --system --create-home --home-dir /var/lib/avagenc avagenc
USER avagenc

EXPOSE 8080
CMD ["avagenc", "serve"]
