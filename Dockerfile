# Build: the toolchain this crate is tested with.
FROM rust:1.95-bookworm AS builder
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin workflow-backend

# Run: a slim image with CA certificates (TLS to Postgres and connector proxies).
FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 workflow
COPY --from=builder /src/target/release/workflow-backend /usr/local/bin/workflow-backend
USER workflow
ENV WORKFLOW_BACKEND_BIND=0.0.0.0:7000 \
    WORKFLOW_BACKEND_LOG_FORMAT=json
EXPOSE 7000
ENTRYPOINT ["workflow-backend"]
CMD ["serve"]
