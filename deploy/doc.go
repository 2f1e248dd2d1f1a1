// Package deploy holds what production needs beside the binary: compose.yaml (a fleet
// on one Docker host), kubernetes/ (a kustomize base and the NATS chart's values),
// systemd/, Prometheus rules with their unit tests, and the Grafana dashboard. It has no
// code; its tests check each file with its ecosystem's own tools: Docker's parser and
// build checks, compose-go, kustomize and the Kubernetes API types, nats-server's
// configuration parser, promtool and systemd-analyze.
package deploy
