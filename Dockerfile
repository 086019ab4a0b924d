# syntax=docker/dockerfile:1
# The runner container image: the static runner binary alone on a
# distroless base, run as the unprivileged user 65532, the scenario and
# its results in /work (mount your directory there).
#
#   docker build --build-arg VERSION=v1.2.3 --build-arg COMMIT=$(git rev-parse HEAD) -t runner .
#   docker run --rm --network host -v "$PWD:/work" --user "$(id -u):$(id -g)" \
#     runner run --json results/{scenario}.json scenario.yaml
#
# VERSION and COMMIT are what `runner --version` prints (linked in as
# deploy/release/build.sh and .goreleaser.yaml do).

FROM golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/runner-dev/runner/internal/sysinfo.Version=${VERSION} -X github.com/runner-dev/runner/internal/sysinfo.Commit=${COMMIT}" \
      -o /out/runner ./cmd/runner

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/runner /usr/local/bin/runner
# USER before WORKDIR: BuildKit then creates /work owned by that user, so
# results can be written there without a mount.
USER 65532:65532
WORKDIR /work
ENTRYPOINT ["/usr/local/bin/runner"]
CMD ["--help"]
