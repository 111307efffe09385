# Build: the toolchain this crate is tested with; pip installs the script worker's pinned
# packages (python/requirements.txt) into target/python-packages during the build.
FROM rust:1.95-bookworm AS builder
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-pip \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin workflow-backend \
    && test -f target/python-packages/.requirements

# Run: a slim image with CA certificates (TLS to Postgres and connector proxies) and the
# CPython 3.11 that runs scripts, with the packages built above.
FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates python3 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 workflow
COPY --from=builder /src/target/release/workflow-backend /usr/local/bin/workflow-backend
COPY --from=builder /src/target/python-packages /usr/local/lib/workflow-backend/python-packages
USER workflow
ENV WORKFLOW_BACKEND_BIND=0.0.0.0:7000 \
    WORKFLOW_BACKEND_LOG_FORMAT=json \
    WORKFLOW_BACKEND_PYTHON_PACKAGES=/usr/local/lib/workflow-backend/python-packages
EXPOSE 7000
ENTRYPOINT ["workflow-backend"]
CMD ["serve"]
