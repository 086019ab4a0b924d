// Package release holds the tests of runner's packaging: the release build
// (build.sh and .goreleaser.yaml at the repository root), the container
// image (Dockerfile) and the version and commit that each links into the
// binary. No docker, goreleaser or network is needed.
package release
