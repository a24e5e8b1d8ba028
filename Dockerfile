# toolguard-proxy in a container: a static binary on distroless, run as a
# non-root user.
#
#   docker build -t toolguard-proxy .
#   docker run --rm -p 8080:8080 toolguard-proxy -upstream https://api.openai.com
#
# Every flag may also be given as TOOLGUARD_<NAME> (docker run -e
# TOOLGUARD_UPSTREAM=https://api.openai.com -e TOOLGUARD_THREAD_LIMIT=50);
# the command line wins, so -listen, set below, is changed by passing
# -listen again. The build context holds no .git (.dockerignore), so
# -version prints "toolguard-proxy devel unknown" for an image built here.

FROM golang:1.26 AS build
WORKDIR /src
# The modules first, so that a change to the sources reuses their layer.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/toolguard-proxy ./cmd/toolguard-proxy

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/toolguard-proxy /toolguard-proxy
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/toolguard-proxy", "-listen", "0.0.0.0:8080"]
