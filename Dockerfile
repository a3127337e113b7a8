# cdpguard with Debian's Chromium. No container engine runs in this
# project's sandbox: this file is checked by deploy/dockerfile_test.go
# (stages, user, HEALTHCHECK, environment, exec-form ENTRYPOINT), never
# built there. See deploy/README.md and docs/scaling.md.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=""
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-X main.version=${VERSION}" -o /out/cdpguard ./cmd/cdpguard

FROM debian:bookworm-slim
# curl only for the HEALTHCHECK; fonts so pages render text.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      chromium ca-certificates curl fonts-liberation \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/cdpguard /usr/local/bin/cdpguard
# Non-root: cdpguard adds --no-sandbox only as root, so here Chromium keeps
# its sandbox, which needs user namespaces (Debian's chromium has no setuid
# helper). docs/decisions/2026-12-01-container-sandbox.md says what the
# runtime must allow (compose: security_opt; Kubernetes: seccompProfile).
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin cdpguard
USER 10001:10001
WORKDIR /home/cdpguard
# The deployment's names (DESIGN "Configuration"); empty means the default.
# ALLOWED_ORIGINS empty blocks everything: set it at run time.
ENV CDPGUARD_LISTEN=0.0.0.0:9222 \
    CDPGUARD_PUBLIC_HOST=cdpguard \
    CHROME_PATH=/usr/bin/chromium \
    ALLOWED_ORIGINS="" \
    BLOCKED_ORIGINS="" \
    EXTRA_INSTRUCTIONS="" \
    SEARCH_URL="" \
    SESSION_HEADER=X-LibreChat-User \
    SESSION_IDLE_SECONDS=900 \
    CDPGUARD_LOG_FORMAT=json
EXPOSE 9222
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["curl", "-fsS", "-o", "/dev/null", "http://127.0.0.1:9222/readyz"]
# Exec form: cdpguard is PID 1 and gets SIGTERM itself (issue 14); it
# stops Chromium before it exits.
ENTRYPOINT ["/usr/local/bin/cdpguard"]
CMD ["serve"]
