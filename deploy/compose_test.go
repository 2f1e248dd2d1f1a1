package deploy

import (
	"bytes"
	"context"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/nats-io/nats-server/v2/server"
	"sigs.k8s.io/yaml"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/node"
)

// composeEnv is what an operator exports before `docker compose up`.
var composeEnv = map[string]string{
	"AGENTMUX_ROUTE_PASSWORD":   "route0pw",
	"AGENTMUX_FLEET_PASSWORD":   "fleet0pw",
	"AGENTMUX_OPS_PASSWORD":     "ops0pw",
	"AGENTMUX_CONSOLE_PASSWORD": "console0pw",
	"AGENTMUX_CONSOLE_TOKEN":    "console-token",
	"AGENTMUX_METRICS_TOKEN":    "metrics-token",
	"GRAFANA_ADMIN_PASSWORD":    "grafana0pw",
}

// loadCompose loads deploy/compose.yaml with compose's own loader, as `docker compose`
// does, with env as the environment.
func loadCompose(t *testing.T, env map[string]string) (*types.Project, error) {
	t.Helper()
	var list []string
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	opts, err := cli.NewProjectOptions([]string{"compose.yaml"}, cli.WithWorkingDirectory("."), cli.WithEnv(list),
		cli.WithInterpolation(true), cli.WithResolvedPaths(true), cli.WithConsistency(true))
	if err != nil {
		t.Fatal(err)
	}
	return cli.ProjectFromOptions(context.Background(), opts)
}

// TestCompose: deploy/compose.yaml loads, and what it starts fits together: three NATS
// servers whose configuration nats-server accepts (one JetStream cluster, fsync on every
// write, the manifest's users with their roles' permissions), agent nodes on the image
// with the agent CLIs and the supervisor node on the distroless one, each reading a
// manifest agentmux accepts, checked healthy by `agentmux health` and given time to drain;
// Prometheus with a configuration promtool accepts, scraping every node with the token;
// Grafana provisioned with that Prometheus and the dashboard.
func TestCompose(t *testing.T) {
	p, err := loadCompose(t, composeEnv)
	if err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	names := p.ServiceNames()
	slices.Sort(names)
	want := []string{"agents1", "agents2", "console", "grafana", "nats1", "nats2", "nats3", "prometheus", "supervisors"}
	if !slices.Equal(names, want) {
		t.Fatalf("services %v; want %v", names, want)
	}
	for name, c := range p.Configs {
		if c.File == "" {
			continue
		}
		if _, err := os.Stat(c.File); err != nil {
			t.Errorf("config %s: %v", name, err)
		}
	}

	// Without a password, compose stops and says which.
	partial := maps.Clone(composeEnv)
	delete(partial, "AGENTMUX_FLEET_PASSWORD")
	if _, err := loadCompose(t, partial); err == nil || !strings.Contains(err.Error(), "set AGENTMUX_FLEET_PASSWORD") {
		t.Errorf("compose.yaml without AGENTMUX_FLEET_PASSWORD: %v", err)
	}

	manifest := composeManifest(t, p)
	// The servers' users are what `agentmux nats-auth` prints for the manifest.
	var users bytes.Buffer
	if err := bus.WriteAuthorization(&users, node.ServerUsers(manifest)); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(read(t, p.Configs["nats-auth"].File), users.String()) {
		t.Errorf("compose/nats-auth.conf is not what the manifest's users make: go run ./cmd/runtime nats-auth -c deploy/compose/agentmux.toml > deploy/compose/nats-auth.conf")
	}
	for _, s := range []string{"nats1", "nats2", "nats3"} {
		checkNATSService(t, p, p.Services[s], manifest)
	}
	stages, _, _ := dockerfile(t)
	for _, s := range []string{"agents1", "agents2", "supervisors"} {
		checkNodeService(t, p, p.Services[s], manifest, stages)
	}
	checkPrometheusService(t, p, manifest)
	checkGrafanaService(t, p)

	console := p.Services["console"]
	if !slices.Equal(console.Command[:3], []string{"console", "-c", "/etc/agentmux/agentmux.toml"}) ||
		deref(console.Environment["AGENTMUX_NATS_USER"]) != "console" || deref(console.Environment["AGENTMUX_CONSOLE_TOKEN"]) == "" {
		t.Errorf("console: command %v, environment %v", console.Command, console.Environment)
	}
}

// composeManifest is the agentmux manifest the services mount, loaded as a node does.
func composeManifest(t *testing.T, p *types.Project) *config.Manifest {
	t.Helper()
	m, err := config.Load(p.Configs["agentmux"].File)
	if err != nil {
		t.Fatalf("the compose manifest: %v", err)
	}
	// Its servers are the compose file's NATS services.
	var hosts []string
	for _, u := range strings.Split(m.NATS.URL, ",") {
		parsed, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, parsed.Host)
	}
	if !slices.Equal(hosts, []string{"nats1:4222", "nats2:4222", "nats3:4222"}) {
		t.Errorf("the manifest's url names %v; want the three NATS services", hosts)
	}
	return m
}

func checkNATSService(t *testing.T, p *types.Project, s types.ServiceConfig, m *config.Manifest) {
	t.Helper()
	if i := slices.Index(s.Command, "--name"); i < 0 || s.Command[i+1] != s.Name {
		t.Errorf("%s: command %v should name the server after the service", s.Name, s.Command)
	}
	// The configuration files as the container sees them.
	dir := t.TempDir()
	var conf string
	for _, ref := range s.Configs {
		c := p.Configs[ref.Source]
		text := c.Content
		if c.File != "" {
			text = read(t, c.File)
		}
		target := filepath.Join(dir, filepath.Base(ref.Target))
		write(t, target, text)
		if slices.Contains(s.Command, ref.Target) {
			conf = target
		}
	}
	if conf == "" {
		t.Fatalf("%s: no mounted config is the --config of %v", s.Name, s.Command)
	}
	for k, v := range s.Environment {
		t.Setenv(k, deref(v))
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("%s: nats-server refuses its configuration: %v", s.Name, err)
	}
	if !opts.JetStream || !opts.SyncAlways || !slices.ContainsFunc(s.Volumes, func(v types.ServiceVolumeConfig) bool { return v.Target == opts.StoreDir }) {
		t.Errorf("%s: jetstream %v, sync always %v, store %q on a volume %v", s.Name, opts.JetStream, opts.SyncAlways, opts.StoreDir, s.Volumes)
	}
	if opts.Cluster.Name == "" || opts.Cluster.Username == "" || opts.Cluster.Password != composeEnv["AGENTMUX_ROUTE_PASSWORD"] {
		t.Errorf("%s: cluster %q, route user %q, password %q", s.Name, opts.Cluster.Name, opts.Cluster.Username, opts.Cluster.Password)
	}
	var routes []string
	for _, r := range opts.Routes {
		pw, _ := r.User.Password()
		if r.User.Username() != opts.Cluster.Username || pw != opts.Cluster.Password {
			t.Errorf("%s: route %s does not carry the route user and password", s.Name, r.Redacted())
		}
		routes = append(routes, r.Host)
	}
	if !slices.Equal(routes, []string{"nats1:6222", "nats2:6222", "nats3:6222"}) {
		t.Errorf("%s: routes %v; want the three servers' cluster ports", s.Name, routes)
	}
	if len(opts.Users) != len(m.NATS.Users) {
		t.Errorf("%s: %d users; the manifest has %d", s.Name, len(opts.Users), len(m.NATS.Users))
	}
	for _, u := range opts.Users {
		if want := composeEnv[passwordEnv(m, u.Username)]; want == "" || u.Password != want {
			t.Errorf("%s: user %s has password %q; want the value of its password_env", s.Name, u.Username, u.Password)
		}
	}
}

// passwordEnv is the variable holding the password of the manifest's user name.
func passwordEnv(m *config.Manifest, name string) string {
	for _, u := range m.NATS.Users {
		if u.Name == name {
			return u.PasswordEnv
		}
	}
	return ""
}

// checkNodeService: an agentmux node's image, command, environment, health check and
// stop grace.
func checkNodeService(t *testing.T, p *types.Project, s types.ServiceConfig, m *config.Manifest, stages map[string]*instructions.Stage) {
	t.Helper()
	target := "runtime"
	wantFlag := "--no-hosts"
	if strings.HasPrefix(s.Name, "agents") {
		target, wantFlag = "agents", "--no-supervisors"
	}
	if built := buildTarget(p, s.Image); built != target {
		t.Errorf("%s: image %s is built from target %q; want %q", s.Name, s.Image, built, target)
	}
	if _, ok := stages[target]; !ok {
		t.Errorf("%s: the Dockerfile has no stage %s", s.Name, target)
	}
	manifestPath := "/etc/agentmux/agentmux.toml"
	if !slices.Equal(s.Command, []string{"up", "-c", manifestPath, "--name", s.Name, wantFlag}) {
		t.Errorf("%s: command %v; want up -c %s --name %s %s", s.Name, s.Command, manifestPath, s.Name, wantFlag)
	}
	if !slices.ContainsFunc(s.Configs, func(c types.ServiceConfigObjConfig) bool { return c.Source == "agentmux" && c.Target == manifestPath }) {
		t.Errorf("%s: the manifest is not mounted at %s", s.Name, manifestPath)
	}
	needs := []string{m.NATS.PasswordEnv, m.Metrics.TokenEnv}
	if target == "agents" {
		for _, h := range m.Hosts {
			needs = append(needs, h.InheritEnv...)
		}
	}
	for _, v := range needs {
		if _, ok := s.Environment[v]; !ok {
			t.Errorf("%s: %s is not in its environment", s.Name, v)
		}
	}
	hc := s.HealthCheck
	if hc == nil || !slices.Equal([]string(hc.Test), []string{"CMD", "/usr/local/bin/agentmux", "health", "-c", manifestPath}) {
		t.Errorf("%s: health check %+v; want agentmux health on the manifest", s.Name, hc)
	}
	// SIGTERM drains for 30 s (up --grace) before the agents stop: compose must wait.
	if s.StopGracePeriod == nil || time.Duration(*s.StopGracePeriod) < 45*time.Second {
		t.Errorf("%s: stop_grace_period %v leaves no time to drain (30 s) and stop", s.Name, s.StopGracePeriod)
	}
}

// buildTarget is the Dockerfile target the service building image uses.
func buildTarget(p *types.Project, image string) string {
	for _, s := range p.Services {
		if s.Image == image && s.Build != nil {
			return s.Build.Target
		}
	}
	return ""
}

func checkPrometheusService(t *testing.T, p *types.Project, m *config.Manifest) {
	t.Helper()
	s := p.Services["prometheus"]
	dir := t.TempDir()
	var prom string
	for _, ref := range s.Configs {
		target := filepath.Join(dir, filepath.Base(ref.Target))
		write(t, target, read(t, p.Configs[ref.Source].File))
		if strings.HasSuffix(ref.Target, "prometheus.yml") {
			prom = target
		}
	}
	if len(s.Secrets) != 1 || p.Secrets[s.Secrets[0].Source].Environment != m.Metrics.TokenEnv {
		t.Fatalf("prometheus: secrets %v; want the metrics token from %s", s.Secrets, m.Metrics.TokenEnv)
	}
	secret := "/run/secrets/" + s.Secrets[0].Source
	text := read(t, prom)
	if !strings.Contains(text, "credentials_file: "+secret) {
		t.Errorf("prometheus.yml does not read the token from %s", secret)
	}
	// promtool checks the rules it loads and the token file it reads, here in dir.
	token := filepath.Join(dir, "token")
	write(t, token, "metrics-token")
	write(t, prom, strings.ReplaceAll(text, secret, token))
	if out := promtool(t, dir, "check", "config", prom); !strings.Contains(out, "SUCCESS") {
		t.Fatalf("promtool check config:\n%s", out)
	}
	var cfg struct {
		ScrapeConfigs []struct {
			JobName       string `json:"job_name"`
			StaticConfigs []struct {
				Targets []string `json:"targets"`
			} `json:"static_configs"`
		} `json:"scrape_configs"`
	}
	if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(m.Metrics.Addr)
	var targets []string
	for _, sc := range cfg.ScrapeConfigs {
		if sc.JobName != "agentmux" { // the rules' AgentmuxNodeDown watches up{job="agentmux"}
			continue
		}
		for _, st := range sc.StaticConfigs {
			targets = append(targets, st.Targets...)
		}
	}
	slices.Sort(targets)
	if want := []string{"agents1:" + port, "agents2:" + port, "supervisors:" + port}; !slices.Equal(targets, want) {
		t.Errorf("job agentmux scrapes %v; want every node's metrics port, %v", targets, want)
	}
	if !slices.Contains(s.Command, "--enable-feature=native-histograms") {
		t.Errorf("prometheus: %v; the dashboard's heatmap needs native histograms", s.Command)
	}
}

func checkGrafanaService(t *testing.T, p *types.Project) {
	t.Helper()
	s := p.Services["grafana"]
	mounted := map[string]string{}
	for _, ref := range s.Configs {
		mounted[ref.Target] = p.Configs[ref.Source].File
	}
	var ds struct {
		Datasources []struct {
			Type      string `json:"type"`
			URL       string `json:"url"`
			IsDefault bool   `json:"isDefault"`
		} `json:"datasources"`
	}
	if err := yaml.Unmarshal([]byte(read(t, mounted["/etc/grafana/provisioning/datasources/agentmux.yaml"])), &ds); err != nil {
		t.Fatal(err)
	}
	if len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" || ds.Datasources[0].URL != "http://prometheus:9090" || !ds.Datasources[0].IsDefault {
		t.Errorf("grafana datasources %+v; want the prometheus service, default", ds.Datasources)
	}
	var dash struct {
		Providers []struct {
			Type    string `json:"type"`
			Options struct {
				Path string `json:"path"`
			} `json:"options"`
		} `json:"providers"`
	}
	if err := yaml.Unmarshal([]byte(read(t, mounted["/etc/grafana/provisioning/dashboards/agentmux.yaml"])), &dash); err != nil {
		t.Fatal(err)
	}
	if len(dash.Providers) != 1 || dash.Providers[0].Type != "file" {
		t.Fatalf("grafana dashboard providers %+v", dash.Providers)
	}
	file := mounted[dash.Providers[0].Options.Path+"/agentmux.json"]
	if abs, _ := filepath.Abs("grafana/agentmux.json"); file != abs {
		t.Errorf("grafana's dashboard folder holds %q; want deploy/grafana/agentmux.json", file)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
