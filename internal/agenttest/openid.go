package agenttest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/proctest"
)

// OIDCProviderVersion is node-oidc-provider's (npm oidc-provider), the OpenID provider
// the console's sign-in is tested against (keep in step with .ci/run).
const OIDCProviderVersion = "9.13.3"

// OIDCClient is a client registered with the provider.
type OIDCClient struct {
	ID          string   `json:"client_id"`
	Secret      string   `json:"client_secret"`
	RedirectURI []string `json:"redirect_uris"`
}

// OpenIDProvider starts a real OpenID provider on loopback, with clients and accounts
// (a login and its groups; its email is the login), and returns its issuer URL. Its
// login page takes any password. It is stopped when the test ends.
func OpenIDProvider(t testing.TB, clients []OIDCClient, accounts map[string][]string) string {
	t.Helper()
	module := filepath.Join(NPMPackage(t, "oidc-provider", OIDCProviderVersion), "lib", "index.js")
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "openid-provider.mjs")
	issuer := fmt.Sprintf("http://127.0.0.1:%d", proctest.FreePort(t))
	c, _ := json.Marshal(clients)
	a, _ := json.Marshal(accounts)
	cmd := exec.Command("node", script)
	cmd.Env = append(os.Environ(), "OP_MODULE="+module, "OP_ISSUER="+issuer, "OP_CLIENTS="+string(c), "OP_ACCOUNTS="+string(a))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the OpenID provider: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("the OpenID provider's stderr:\n%s", stderr.String())
		}
	})
	up := make(chan bool, 1)
	go func() {
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			if strings.HasPrefix(lines.Text(), "openid provider listening") {
				up <- true
			}
		}
		close(up)
	}()
	select {
	case ok := <-up:
		if !ok {
			t.Fatalf("the OpenID provider ended before it listened:\n%s", stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the OpenID provider did not listen within 30 s:\n%s", stderr.String())
	}
	return issuer
}
