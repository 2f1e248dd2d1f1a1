package metrics

import "github.com/prometheus/client_golang/prometheus"

// ManifestMetrics are the node's manifest reloads (SIGHUP), in Prometheus's own terms.
type ManifestMetrics struct {
	ManifestReloads    *prometheus.CounterVec // outcome: ok, refused
	ManifestReloadedOK prometheus.Gauge       // 1 when the last reload took, 0 when it was refused
}

func newManifestMetrics(f *families) ManifestMetrics {
	return ManifestMetrics{
		ManifestReloads: f.counter("manifest_reloads_total", "Manifest reloads asked for (SIGHUP), by outcome: ok, or refused (a bad manifest, or a change that needs a restart; the manifest before it runs on).", "outcome"),
		ManifestReloadedOK: f.gauge("manifest_last_reload_successful",
			"1 when the last manifest reload took (or none was asked for), 0 when it was refused: the file on disk is not what runs.").WithLabelValues(),
	}
}
