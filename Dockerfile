# One vendor's image: docker build --build-arg PROVIDER=dummy -t ccm-dummy .
# (make image builds the same without a Docker daemon; see the Makefile.)
ARG GO_VERSION=1.26
FROM golang:${GO_VERSION} AS build
ARG PROVIDER=dummy
ARG VERSION=v0.1.0-dev
WORKDIR /src
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -tags "${PROVIDER}" \
      -ldflags "$(VERSION=${VERSION} bash build/ldflags.sh)" \
      -o /out/ccm ./cmd/ccm && /out/ccm providers

FROM gcr.io/distroless/static-debian12:nonroot
ARG PROVIDER=dummy
ARG VERSION=v0.1.0-dev
LABEL org.opencontainers.image.title="ccm-${PROVIDER}" \
      org.opencontainers.image.version="${VERSION}" \
      io.ccm.provider="${PROVIDER}"
COPY --from=build /out/ccm /ccm
USER 65532:65532
ENTRYPOINT ["/ccm"]
