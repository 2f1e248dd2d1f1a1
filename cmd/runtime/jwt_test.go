package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/internal/proctest"
)

// operatorMode is a NATS server in operator (decentralized JWT) mode and the .creds of
// its users, all made by the test with nats-io/jwt.
type operatorMode struct {
	srv     *server.Server
	account nkeys.KeyPair
	dir     string
}

func newKeys(t *testing.T, create func() (nkeys.KeyPair, error)) (nkeys.KeyPair, string) {
	t.Helper()
	kp, err := create()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	return kp, pub
}

func startOperatorMode(t *testing.T) *operatorMode {
	t.Helper()
	okp, opub := newKeys(t, nkeys.CreateOperator)
	oc := jwt.NewOperatorClaims(opub)
	oc.Name = "agentmux-test"
	account := func(name string, jetstream bool) (nkeys.KeyPair, string, string) {
		kp, pub := newKeys(t, nkeys.CreateAccount)
		ac := jwt.NewAccountClaims(pub)
		ac.Name = name
		if jetstream {
			ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: jwt.NoLimit, DiskStorage: jwt.NoLimit, Streams: jwt.NoLimit, Consumer: jwt.NoLimit}
		}
		token, err := ac.Encode(okp)
		if err != nil {
			t.Fatal(err)
		}
		return kp, pub, token
	}
	_, sysPub, sysJWT := account("SYS", false)
	appKP, appPub, appJWT := account("AGENTMUX", true)
	resolver := &server.MemAccResolver{}
	for pub, token := range map[string]string{sysPub: sysJWT, appPub: appJWT} {
		if err := resolver.Store(pub, token); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: filepath.Join(dir, "js"),
		NoSigs: true, NoLog: true, TrustedOperators: []*jwt.OperatorClaims{oc}, SystemAccount: sysPub, AccountResolver: resolver})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("the operator-mode server did not start")
	}
	return &operatorMode{srv: srv, account: appKP, dir: dir}
}

// creds issues a user of the account with role's grants and writes its .creds file.
func (o *operatorMode) creds(t *testing.T, name string, role bus.Role) string {
	t.Helper()
	ukp, upub := newKeys(t, nkeys.CreateUser)
	uc := jwt.NewUserClaims(upub)
	uc.Name = name
	g := bus.PermissionsFor(bus.User{Name: name, Role: role})
	uc.Pub.Allow.Add(g.Publish...)
	uc.Sub.Allow.Add(g.Subscribe...)
	if g.Responses {
		uc.Resp = &jwt.ResponsePermission{MaxMsgs: 1, Expires: time.Hour}
	}
	token, err := uc.Encode(o.account)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := ukp.Seed()
	data, err := jwt.FormatUserConfig(token, seed)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(o.dir, name+".creds")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestEveryRoleFitsAConnectLine: a user's JWT, which carries its role's permissions,
// travels in its CONNECT line, which a server refuses past its max_control_line (4 KiB
// unless configured): every role's, with a long name, leaves room for the rest of the
// line. The operator's grew past it once, and its users could not connect.
func TestEveryRoleFitsAConnectLine(t *testing.T) {
	account, _ := newKeys(t, nkeys.CreateAccount)
	for _, role := range []bus.Role{bus.RoleNode, bus.RoleOperator, bus.RoleViewer, bus.RoleSupervisor, bus.RoleConsole, bus.RoleLocal} {
		_, upub := newKeys(t, nkeys.CreateUser)
		uc := jwt.NewUserClaims(upub)
		uc.Name = strings.Repeat("n", 32)
		g := bus.PermissionsFor(bus.User{Name: uc.Name, Role: role, Supervisors: []string{"oncall", "reviewer"}, Tools: []string{"deploy"}})
		uc.Pub.Allow.Add(g.Publish...)
		uc.Sub.Allow.Add(g.Subscribe...)
		token, err := uc.Encode(account)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("role %s: a JWT of %d bytes", role, len(token))
		// The rest of the line: the nonce's signature (86 bytes), the user's public key
		// (56), the client's name, version and flags: some 350 bytes.
		if most := 4096 - 512; len(token) > most {
			t.Errorf("role %s's JWT is %d bytes, over %d: its users' CONNECT would pass the server's 4 KiB line; fold its subjects into wildcards", role, len(token), most)
		}
	}
}

// TestOperatorMode: a node and the CLI on a server in operator mode, each with
// the .creds of a user whose JWT carries its role's permissions: a person's answer is
// recorded as the JWT's user, and a viewer is refused a submit.
func TestOperatorMode(t *testing.T) {
	t.Parallel()
	o := startOperatorMode(t)
	manifest := filepath.Join(o.dir, "agentmux.toml")
	m := fmt.Sprintf("[nats]\nurl = %q\ncredentials = %q\n[metrics]\naddr = \"127.0.0.1:0\"\n", o.srv.ClientURL(), o.creds(t, "node1", bus.RoleNode)) +
		simHost("") + "[supervisors.people]\nstrategy = \"human\"\n[[routes]]\nsupervisor = \"people\"\n"
	if err := os.WriteFile(manifest, []byte(m), 0o600); err != nil {
		t.Fatal(err)
	}
	up := runtimeProc(t, "up", "-c", manifest, "--name", "jwt1")
	until(t, "node on the operator-mode server", up.stderr, "node up")

	opsEnv := []string{"AGENTMUX_NATS_CREDS=" + o.creds(t, "ops", bus.RoleOperator)}
	follow := exec.Command(os.Args[0], "submit", "-c", manifest, "--id", "t-jwt", "w",
		`{"steps":[{"send":{"type":"approval","id":"a1","description":"ship it"}},{"await":"a1"},{"result":"shipped"}]}`, "--follow")
	follow.Env = opsEnv
	session := startProc(t, follow)
	var id string
	var last string
	defer func() {
		if t.Failed() {
			t.Log(up.stderr.String(), "\n", last, "\n", session.stderr.String())
		}
	}()
	proctest.EventuallyWithin(t, 20*time.Second, "the request waiting for a person", func() bool {
		p := exec.Command(os.Args[0], "pending", "-c", manifest)
		p.Env = opsEnv
		out := startProc(t, p)
		out.wait(t, 30*time.Second)
		last = out.stdout.String() + out.stderr.String()
		for _, line := range strings.Split(out.stdout.String(), "\n") {
			if f := strings.Fields(line); len(f) > 3 && f[3] == "t-jwt" {
				id = f[0]
			}
		}
		return id != ""
	})
	respond := exec.Command(os.Args[0], "respond", "-c", manifest, id, "yes")
	respond.Env = opsEnv
	if p := startProc(t, respond); p.wait(t, 30*time.Second) != exitOK || !strings.Contains(p.stdout.String(), "as ops") {
		t.Fatalf("respond with .creds: exit %d, %s %s", p.code, p.stdout, p.stderr)
	}
	if code := session.wait(t, 30*time.Second); code != exitOK || !strings.Contains(session.stderr.String(), `"decider":"human:ops"`) {
		t.Fatalf("session: exit %d\n%s", code, session.stderr)
	}

	viewer := exec.Command(os.Args[0], "submit", "-c", manifest, "w", okScript)
	viewer.Env = []string{"AGENTMUX_NATS_CREDS=" + o.creds(t, "auditor", bus.RoleViewer)}
	if p := startProc(t, viewer); p.wait(t, 30*time.Second) != exitError ||
		!strings.Contains(p.stderr.String(), `user "auditor" may not publish to "agentmux.task.w.auditor"`) {
		t.Fatalf("viewer submit: exit %d, %s", p.code, p.stderr)
	}
}
