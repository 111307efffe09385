# Build: the toolchain this crate is tested with; pip installs the script worker's pinned
# packages (crates/scripts/python/requirements.txt) and the worker into target/release/python-packages.
FROM rust:1.95-bookworm AS builder
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-pip \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src

# Dependencies, in a layer of their own: rebuilt only when a manifest, the lock file, a build
# script or the Python requirements change. Stubs stand in for the crates' code (and for the
# loadgen example the manifest names); the script workers' build script runs here too, so pip
# installs the packages in this layer.
COPY Cargo.toml Cargo.lock build.rs ./
COPY crates/app/Cargo.toml crates/app/Cargo.toml
COPY crates/core/Cargo.toml crates/core/Cargo.toml
COPY crates/http/Cargo.toml crates/http/build.rs crates/http/
COPY crates/script-port/Cargo.toml crates/script-port/Cargo.toml
COPY crates/scripts/Cargo.toml crates/scripts/build.rs crates/scripts/
COPY crates/scripts/python/requirements.txt crates/scripts/python/script_worker.py crates/scripts/python/
COPY crates/store/Cargo.toml crates/store/Cargo.toml
COPY crates/types/Cargo.toml crates/types/Cargo.toml
RUN mkdir -p src bench migrations \
    && for crate in app core http script-port scripts store types; do \
         mkdir -p "crates/$crate/src" && touch "crates/$crate/src/lib.rs"; \
       done \
    && echo 'fn main() {}' > src/main.rs \
    && echo 'fn main() {}' > bench/loadgen.rs \
    && touch src/lib.rs \
    && cargo build --release --locked --bin workflow-backend \
    && test -f target/release/python-packages/.requirements

# The real sources: touched so that cargo sees them as newer than the stub build and compiles
# the crate again (the dependencies stay as built above).
COPY . .
RUN touch src/main.rs src/lib.rs crates/*/src/lib.rs \
    && cargo build --release --locked --bin workflow-backend \
    && test -f target/release/python-packages/.requirements

# Run: a slim image with CA certificates (TLS to Postgres and connector proxies) and the
# CPython 3.11 that runs scripts, with the packages built above.
FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates python3 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 workflow
COPY --from=builder /src/target/release/workflow-backend /usr/local/bin/workflow-backend
COPY --from=builder /src/target/release/python-packages /usr/local/lib/workflow-backend/python-packages
USER workflow
ENV WORKFLOW_BACKEND_BIND=0.0.0.0:7000 \
    WORKFLOW_BACKEND_LOG_FORMAT=json \
    WORKFLOW_BACKEND_PYTHON_PACKAGES=/usr/local/lib/workflow-backend/python-packages
EXPOSE 7000
# Ready when the service answers and reaches its database (urlopen raises on a 503).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python3", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:7000/v1.0/health/ready', timeout=4)"]
ENTRYPOINT ["workflow-backend"]
CMD ["serve"]
