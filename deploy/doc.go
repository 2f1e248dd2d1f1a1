// Package deploy holds what production needs beside the binary: Prometheus rules and
// their unit tests, the Grafana dashboard, and (as the deploy issue lands) compose,
// Kubernetes and systemd files. Its tests check them with each ecosystem's own tools.
package deploy
