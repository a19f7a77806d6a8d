# neardup in a container, with the Qdrant client (`--features qdrant`).
#
#   docker build -t neardup .                         build from source (about 30 minutes)
#   mkdir -p dist && cp target/release/neardup dist/ && \
#   docker build -t neardup --target prebuilt .         copy a binary built on the host
#
# The image runs `neardup`; give it a command (`docker run neardup dedup /data/x.jsonl --out
# /data/out`). Models are read from /models (NEARDUP_MODELS): mount a folder that holds them,
# or let the first two-stage run fetch them there.

ARG BASE=debian:bookworm-slim

# What every image needs around the binary.
FROM ${BASE} AS runtime
# CA certificates, for fetching models (a base image that has them, such as one made with
# debootstrap --include=ca-certificates, needs no package download).
RUN [ -e /etc/ssl/certs/ca-certificates.crt ] || (apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*)
# The model cache is written by whichever user the container runs as (compose gives yours).
RUN mkdir -p /models && chmod 1777 /models
ENV NEARDUP_MODELS=/models
WORKDIR /data
ENTRYPOINT ["neardup"]
CMD ["--help"]

# A binary built outside (on a machine without a Rust image, or to skip the build): comes
# before the build stage so that building this target never needs it.
FROM runtime AS prebuilt
ARG NEARDUP_BIN=dist/neardup
COPY ${NEARDUP_BIN} /usr/local/bin/neardup

FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --features qdrant && cp target/release/neardup /neardup

# The default target: built from source.
FROM runtime AS source
COPY --from=build /neardup /usr/local/bin/neardup
