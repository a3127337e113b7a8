# cdpguard with Debian's Chromium. Not built in this project's sandbox (no
# Docker engine there); the same steps run in scripts/serve.sh.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/cdpguard ./cmd/cdpguard

FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/cdpguard /usr/local/bin/cdpguard
# Chromium's sandbox needs an unprivileged user.
RUN useradd --create-home cdpguard
USER cdpguard
EXPOSE 9222
ENTRYPOINT ["cdpguard"]
CMD ["serve", "--listen=0.0.0.0:9222", "--public-host=cdpguard"]
