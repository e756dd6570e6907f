// Package k8s holds the Kubernetes manifests of changerate (a kustomize base, components and the overlays
// dev, prod and prod-hpa; see docs/deploying.md). It has no code: its tests (go test ./deploy/k8s) render every overlay
// with the kustomize API, decode every object strictly into its API type and check the invariants against the
// binaries' configuration, the Go code's Redis ACL and metrics, and promtool.
package k8s
