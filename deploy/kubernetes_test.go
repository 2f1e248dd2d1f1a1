package deploy

import (
	"bytes"
	"encoding/json"
	"net"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/testdeps"
	"github.com/agentmux/agentmux/node"
)

// rendered is the kustomize base rendered, each object decoded into its API type.
type rendered struct {
	deployments     map[string]*appsv1.Deployment
	pdbs            []*policyv1.PodDisruptionBudget
	services        map[string]*corev1.Service
	secrets         map[string]*corev1.Secret
	configMaps      map[string]*corev1.ConfigMap
	serviceMonitors []*monitoringv1.ServiceMonitor
	networkPolicies []*networkingv1.NetworkPolicy
	namespaces      []*corev1.Namespace
}

// kustomize renders deploy/kubernetes with kustomize (PATH's, or built from its module
// on first use: the engine of kubectl kustomize).
func kustomize(t *testing.T) []byte {
	t.Helper()
	cmd := exec.Command(testdeps.Kustomize(t), "build", "kubernetes")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, stderr.String())
	}
	return out
}

// decodeObjects decodes every object strictly (an unknown or misspelt field is an
// error) into the Kubernetes API type of its kind.
func decodeObjects(t *testing.T, stream []byte) rendered {
	t.Helper()
	r := rendered{deployments: map[string]*appsv1.Deployment{}, services: map[string]*corev1.Service{},
		secrets: map[string]*corev1.Secret{}, configMaps: map[string]*corev1.ConfigMap{}}
	for _, doc := range regexp.MustCompile(`(?m)^---$`).Split(string(stream), -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatal(err)
		}
		switch head.APIVersion + " " + head.Kind {
		case "apps/v1 Deployment":
			d := decodeStrict[appsv1.Deployment](t, doc)
			r.deployments[d.Name] = d
		case "policy/v1 PodDisruptionBudget":
			r.pdbs = append(r.pdbs, decodeStrict[policyv1.PodDisruptionBudget](t, doc))
		case "v1 Service":
			svc := decodeStrict[corev1.Service](t, doc)
			r.services[svc.Name] = svc
		case "v1 Secret":
			secret := decodeStrict[corev1.Secret](t, doc)
			r.secrets[secret.Name] = secret
		case "v1 ConfigMap":
			cm := decodeStrict[corev1.ConfigMap](t, doc)
			r.configMaps[cm.Name] = cm
		case "v1 Namespace":
			r.namespaces = append(r.namespaces, decodeStrict[corev1.Namespace](t, doc))
		case "monitoring.coreos.com/v1 ServiceMonitor":
			r.serviceMonitors = append(r.serviceMonitors, decodeStrict[monitoringv1.ServiceMonitor](t, doc))
		case "networking.k8s.io/v1 NetworkPolicy":
			r.networkPolicies = append(r.networkPolicies, decodeStrict[networkingv1.NetworkPolicy](t, doc))
		default:
			t.Fatalf("the base renders a %s %s, which this test does not know", head.APIVersion, head.Kind)
		}
	}
	return r
}

// decodeStrict decodes one object into T, refusing unknown fields.
func decodeStrict[T any](t *testing.T, doc string) *T {
	t.Helper()
	obj := new(T)
	if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
		t.Fatalf("an object does not decode strictly into %T: %v\n%s", obj, err, doc)
	}
	return obj
}

// TestKubernetes: the kustomize base renders, every object decodes strictly into its
// API type, and the objects fit together: each node Deployment runs the manifest the
// ConfigMap holds with probes on its metrics port, resources, a disruption budget and
// time to drain, as a non-root user with a read-only root; its secrets hold what the
// manifest reads; the ServiceMonitor scrapes every node with the metrics token as job
// "agentmux".
func TestKubernetes(t *testing.T) {
	r := decodeObjects(t, kustomize(t))
	if len(r.namespaces) != 1 || len(r.serviceMonitors) != 1 || len(r.networkPolicies) != 1 || len(r.configMaps) != 1 {
		t.Fatalf("the base renders %d namespaces, %d ServiceMonitors, %d NetworkPolicies and %d ConfigMaps; want one each",
			len(r.namespaces), len(r.serviceMonitors), len(r.networkPolicies), len(r.configMaps))
	}
	var cm *corev1.ConfigMap
	for _, c := range r.configMaps {
		cm = c
	}
	dir := t.TempDir()
	write(t, filepath.Join(dir, "agentmux.toml"), cm.Data["agentmux.toml"])
	m, err := config.Load(filepath.Join(dir, "agentmux.toml"))
	if err != nil {
		t.Fatalf("the ConfigMap's manifest: %v", err)
	}
	_, metricsPort, _ := net.SplitHostPort(m.Metrics.Addr)

	for name, want := range map[string]struct {
		image, flag string
		user        int64
	}{
		"agentmux-agents":      {"agentmux:agents", "--no-supervisors", 1000},
		"agentmux-supervisors": {"agentmux:latest", "--no-hosts", nonroot},
	} {
		d := r.deployments[name]
		if d == nil {
			t.Errorf("no Deployment %s", name)
			continue
		}
		checkNodeDeployment(t, r, d, cm, m, metricsPort, want.image, want.flag, want.user)
	}

	// The Service named agentmux (so the scrape job is "agentmux") selects both kinds
	// of node; the ServiceMonitor selects it and sends the token.
	svc := r.services["agentmux"]
	if svc == nil {
		t.Fatal("no Service agentmux for the ServiceMonitor")
	}
	for _, name := range []string{"agentmux-agents", "agentmux-supervisors"} {
		if !selects(svc.Spec.Selector, r.deployments[name].Spec.Template.Labels) {
			t.Errorf("Service agentmux does not select the pods of %s", name)
		}
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != "metrics" {
		t.Errorf("Service agentmux ports %+v; want the metrics port", svc.Spec.Ports)
	}
	sm := r.serviceMonitors[0]
	if !selects(sm.Spec.Selector.MatchLabels, svc.Labels) || len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != svc.Spec.Ports[0].Name {
		t.Errorf("the ServiceMonitor does not scrape Service agentmux's metrics port: %+v", sm.Spec)
	} else if a := sm.Spec.Endpoints[0].Authorization; a == nil || a.Type != "Bearer" || !secretHas(r, a.Credentials.Name, a.Credentials.Key) || a.Credentials.Key != m.Metrics.TokenEnv {
		t.Errorf("the ServiceMonitor does not send %s from a secret: %+v", m.Metrics.TokenEnv, a)
	}

	// The console signs people in with its token and answers as user console.
	console := r.deployments["agentmux-console"]
	if console == nil {
		t.Fatal("no Deployment agentmux-console")
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range console.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e
	}
	if env["AGENTMUX_NATS_USER"].Value != "console" || !envFromSecret(r, env["AGENTMUX_NATS_PASSWORD"]) || !envFromSecret(r, env["AGENTMUX_CONSOLE_TOKEN"]) {
		t.Errorf("console environment %+v", env)
	}
}

func checkNodeDeployment(t *testing.T, r rendered, d *appsv1.Deployment, cm *corev1.ConfigMap, m *config.Manifest, metricsPort, image, flag string, user int64) {
	t.Helper()
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%s: %d containers", d.Name, len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.Image != image {
		t.Errorf("%s: image %s; want %s", d.Name, c.Image, image)
	}
	// The manifest mounted from the ConfigMap kustomize generated.
	var manifestDir string
	for _, vm := range c.VolumeMounts {
		for _, v := range pod.Volumes {
			if v.Name == vm.Name && v.ConfigMap != nil && v.ConfigMap.Name == cm.Name {
				manifestDir = vm.MountPath
			}
		}
	}
	wantArgs := []string{"up", "-c", path.Join(manifestDir, "agentmux.toml"), "--name", "$(POD_NAME)", flag}
	if manifestDir == "" || !slices.Equal(c.Args, wantArgs) {
		t.Errorf("%s: args %v with the manifest in %q; want %v", d.Name, c.Args, manifestDir, wantArgs)
	}
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "POD_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name"
	}) {
		t.Errorf("%s: POD_NAME is not the pod's name", d.Name)
	}
	// Probes on the metrics port: ready is /readyz (503 while draining), alive /healthz.
	port := slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" })
	if port < 0 || c.Ports[port].ContainerPort != int32(atoi(metricsPort)) {
		t.Errorf("%s: ports %+v; want metrics on the manifest's %s", d.Name, c.Ports, metricsPort)
	}
	for probe, want := range map[*corev1.Probe]string{c.ReadinessProbe: "/readyz", c.LivenessProbe: "/healthz"} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != want || probe.HTTPGet.Port.String() != "metrics" {
			t.Errorf("%s: probe %+v; want GET %s on metrics", d.Name, probe, want)
		}
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("%s: resources %+v; want cpu and memory requests and a memory limit", d.Name, c.Resources)
	}
	// SIGTERM drains for 30 s (up --grace), then stops the agents.
	if g := pod.TerminationGracePeriodSeconds; g == nil || *g < 45 {
		t.Errorf("%s: terminationGracePeriodSeconds %d leaves no time to drain (30 s) and stop", d.Name, ptrOr(g))
	}
	sc, psc := c.SecurityContext, pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != user ||
		sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("%s: security context %+v / %+v; want non-root %d, read-only root, no escalation, no capabilities", d.Name, psc, sc, user)
	}
	// The secrets the manifest reads are in the environment, from a secret that has them.
	for _, v := range []string{m.NATS.PasswordEnv, m.Metrics.TokenEnv} {
		if !slices.ContainsFunc(c.EnvFrom, func(e corev1.EnvFromSource) bool { return e.SecretRef != nil && secretHas(r, e.SecretRef.Name, v) }) {
			t.Errorf("%s: %s comes from no secret", d.Name, v)
		}
	}
	// A disruption budget covers the pods.
	if !slices.ContainsFunc(r.pdbs, func(p *policyv1.PodDisruptionBudget) bool {
		return selects(p.Spec.Selector.MatchLabels, d.Spec.Template.Labels) && (p.Spec.MinAvailable != nil || p.Spec.MaxUnavailable != nil)
	}) {
		t.Errorf("%s: no PodDisruptionBudget selects its pods", d.Name)
	}
	if !selects(d.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
		t.Errorf("%s: its selector does not select its own pods", d.Name)
	}
}

// TestNATSValues: nats-values.yaml sets up the official chart as agentmux needs it (a
// three-server cluster, JetStream on files with fsync always), and its users are the
// manifest's, with their roles' permissions: rendered as the chart does, nats-server's
// parser takes them with the passwords from the agentmux-nats secret.
func TestNATSValues(t *testing.T) {
	var values struct {
		Config struct {
			Cluster struct {
				Enabled  bool `json:"enabled"`
				Replicas int  `json:"replicas"`
			} `json:"cluster"`
			JetStream struct {
				Enabled   bool `json:"enabled"`
				FileStore struct {
					Enabled bool   `json:"enabled"`
					Dir     string `json:"dir"`
					PVC     struct {
						Enabled bool   `json:"enabled"`
						Size    string `json:"size"`
					} `json:"pvc"`
				} `json:"fileStore"`
				Merge map[string]any `json:"merge"`
			} `json:"jetstream"`
			Monitor struct {
				Enabled bool `json:"enabled"`
			} `json:"monitor"`
			Merge map[string]any `json:"merge"`
		} `json:"config"`
		Container struct {
			Env map[string]struct {
				ValueFrom *corev1.EnvVarSource `json:"valueFrom"`
			} `json:"env"`
			Resources corev1.ResourceRequirements `json:"resources"`
		} `json:"container"`
		PodDisruptionBudget struct {
			Enabled bool `json:"enabled"`
		} `json:"podDisruptionBudget"`
		NatsBox struct {
			Enabled bool `json:"enabled"`
		} `json:"natsBox"`
	}
	text := read(t, "kubernetes/nats-values.yaml")
	if err := yaml.UnmarshalStrict([]byte(text), &values); err != nil {
		t.Fatalf("nats-values.yaml: %v", err)
	}
	c := values.Config
	if !c.Cluster.Enabled || c.Cluster.Replicas != 3 || !c.JetStream.Enabled || !c.JetStream.FileStore.Enabled || !c.JetStream.FileStore.PVC.Enabled ||
		c.JetStream.Merge["sync_interval"] != "always" || !values.PodDisruptionBudget.Enabled {
		t.Errorf("nats-values.yaml: %+v; want a cluster of 3, JetStream on files (a volume each) with sync_interval always, a PDB", c)
	}

	m, err := config.Load("kubernetes/agentmux.toml")
	if err != nil {
		t.Fatal(err)
	}
	var gen bytes.Buffer
	if err := bus.WriteHelmAuthorization(&gen, node.ServerUsers(m)); err != nil {
		t.Fatal(err)
	}
	var want struct {
		Config struct {
			Merge map[string]any `json:"merge"`
		} `json:"config"`
	}
	if err := yaml.Unmarshal(gen.Bytes(), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.Merge["authorization"], want.Config.Merge["authorization"]) {
		t.Errorf("nats-values.yaml's config.merge.authorization is not what the manifest's users make: go run ./cmd/runtime nats-auth -c deploy/kubernetes/agentmux.toml --helm")
	}

	// Rendered as the chart renders config.merge, with each referenced variable set
	// the way container.env sets it: from the agentmux-nats secret of the base.
	r := decodeObjects(t, kustomize(t))
	conf := chartConfig(t, c.Merge)
	for _, ref := range regexp.MustCompile(`": \$([A-Z_]+)`).FindAllStringSubmatch(conf, -1) {
		name := ref[1]
		from := values.Container.Env[name].ValueFrom
		if from == nil || from.SecretKeyRef == nil || !secretHas(r, from.SecretKeyRef.Name, from.SecretKeyRef.Key) {
			t.Errorf("$%s: container.env sets it from %+v, not from a key of the base's secrets", name, from)
		}
		t.Setenv(name, name+"-value")
	}
	file := filepath.Join(t.TempDir(), "nats.conf")
	write(t, file, conf)
	opts, err := server.ProcessConfigFile(file)
	if err != nil {
		t.Fatalf("nats-server refuses the chart's rendering of config.merge: %v\n%s", err, conf)
	}
	if len(opts.Users) != len(m.NATS.Users) {
		t.Errorf("%d users; the manifest has %d", len(opts.Users), len(m.NATS.Users))
	}
	for _, u := range opts.Users {
		if pw := passwordEnv(m, u.Username); u.Password != pw+"-value" {
			t.Errorf("user %s: password %q; want $%s", u.Username, u.Password, pw)
		}
	}

	// The NetworkPolicy guards the chart's pods' routes.
	np := r.networkPolicies[0]
	if np.Spec.PodSelector.MatchLabels["app.kubernetes.io/name"] != "nats" {
		t.Errorf("the NetworkPolicy selects %v, not the chart's pods", np.Spec.PodSelector.MatchLabels)
	}
}

// chartConfig is the server configuration the official NATS chart makes of config.merge:
// JSON without HTML escapes (its toPrettyRawJson), "<< x >>" unquoted (formatConfig).
func chartConfig(t *testing.T, merge map[string]any) string {
	t.Helper()
	var j bytes.Buffer
	enc := json.NewEncoder(&j)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(merge); err != nil {
		t.Fatal(err)
	}
	return regexp.MustCompile(`"<<\s+(.*?)\s+>>"`).ReplaceAllString(j.String(), "$1")
}

// selects reports whether every label of selector is among labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func secretHas(r rendered, name, key string) bool {
	s := r.secrets[name]
	if s == nil {
		return false
	}
	_, ok := s.StringData[key]
	if !ok {
		_, ok = s.Data[key]
	}
	return ok
}

func envFromSecret(r rendered, e corev1.EnvVar) bool {
	return e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && secretHas(r, e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key)
}

func ptrOr[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
