package bus

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"sigs.k8s.io/yaml"
)

// serverUsers has a user of every role, by password and by nkey.
var serverUsers = []ServerUser{
	{User: User{Name: "fleet", Role: RoleNode}, PasswordVar: "FLEET_PW"},
	{User: User{Name: "ops", Role: RoleOperator}, PasswordVar: "OPS_PW"},
	{User: User{Name: "grafana", Role: RoleViewer}, PasswordVar: "VIEW_PW"},
	{User: User{Name: "console", Role: RoleConsole}, PasswordVar: "CONSOLE_PW"},
	{User: User{Name: "pager", Nkey: "UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4", Role: RoleSupervisor,
		Supervisors: []string{"oncall", "review"}, Tools: []string{"sql"}}},
}

var serverPasswords = map[string]string{"FLEET_PW": "f-secret", "OPS_PW": "o-secret", "VIEW_PW": "v-secret", "CONSOLE_PW": "c-secret"}

// checkServerUsers loads a server configuration file with nats-server's own parser and
// checks that it lets in exactly serverUsers, each with the permissions the embedded
// server gives its role, and their passwords from the environment.
func checkServerUsers(t *testing.T, conf string) {
	t.Helper()
	for k, v := range serverPasswords {
		t.Setenv(k, v)
	}
	path := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("nats-server refuses the configuration: %v\n%s", err, conf)
	}
	if len(opts.Users)+len(opts.Nkeys) != len(serverUsers) {
		t.Fatalf("%d users and %d nkeys; want %d in all", len(opts.Users), len(opts.Nkeys), len(serverUsers))
	}
	byName := map[string]*server.User{}
	for _, u := range opts.Users {
		byName[u.Username] = u
	}
	byKey := map[string]*server.NkeyUser{}
	for _, u := range opts.Nkeys {
		byKey[u.Nkey] = u
	}
	for _, u := range serverUsers {
		want := PermissionsFor(u.User).forServer()
		var got *server.Permissions
		if u.Nkey != "" {
			nu := byKey[u.Nkey]
			if nu == nil {
				t.Errorf("nkey user %s is missing", u.Name)
				continue
			}
			got = nu.Permissions
		} else {
			su := byName[u.Name]
			if su == nil {
				t.Errorf("user %s is missing", u.Name)
				continue
			}
			if su.Password != serverPasswords[u.PasswordVar] {
				t.Errorf("user %s: password %q; want the value of %s", u.Name, su.Password, u.PasswordVar)
			}
			got = su.Permissions
		}
		// As JSON, an empty list and none are the same (the server treats them alike).
		if g, w := jsonOf(t, got), jsonOf(t, want); g != w {
			t.Errorf("user %s (%s): permissions\n%s\nwant what the embedded server grants:\n%s", u.Name, u.Role, g, w)
		}
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWriteAuthorization(t *testing.T) {
	var b bytes.Buffer
	if err := WriteAuthorization(&b, serverUsers); err != nil {
		t.Fatal(err)
	}
	checkServerUsers(t, b.String())
}

// TestWriteHelmAuthorization renders the values as the official chart does: YAML to
// JSON, then "<< x >>" unquoted (its nats.formatConfig).
func TestWriteHelmAuthorization(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHelmAuthorization(&b, serverUsers); err != nil {
		t.Fatal(err)
	}
	var values struct {
		Config struct {
			Merge map[string]any `json:"merge"`
		} `json:"config"`
	}
	if err := yaml.UnmarshalStrict(b.Bytes(), &values); err != nil {
		t.Fatalf("values: %v\n%s", err, b.String())
	}
	checkServerUsers(t, helmConfig(t, values.Config.Merge))
}

// helmConfig is the server configuration the official NATS chart makes of config.merge.
func helmConfig(t *testing.T, merge map[string]any) string {
	t.Helper()
	var j bytes.Buffer
	enc := json.NewEncoder(&j) // toPrettyRawJson: no \u003c, \u003e or \u0026
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(merge); err != nil {
		t.Fatal(err)
	}
	return regexp.MustCompile(`"<<\s+(.*?)\s+>>"`).ReplaceAllString(j.String(), "$1")
}
