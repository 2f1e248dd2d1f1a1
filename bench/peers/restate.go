package peers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentmux/agentmux/protocol"
)

// Restate is the Restate peer: restate-server, and the service of restate/service.mjs
// on Restate's TypeScript SDK in Node.js, registered with it. A session is a virtual
// object; each request goes to its ask handler over the ingress, which makes an
// awakeable, has the rules service resolve it, and keeps the answer in the object's
// state.
type Restate struct {
	server, service *proc
	ingress, admin  string // base URLs
	http            *http.Client
}

// restateServer is where npm puts restate-server's binary for this machine, under the
// peer's node_modules.
func restateServer(dir string) string {
	return filepath.Join(dir, "node_modules", "@restatedev", "restate-server-"+npmPlatform(), "bin", "restate-server")
}

// StartRestate starts restate-server and the service in src (the directory holding
// service.mjs and its node_modules, from `npm ci`), keeping their files in dir, and
// registers the service; Close stops both.
func StartRestate(ctx context.Context, node, src, dir string) (*Restate, error) {
	ports, err := freePorts(4)
	if err != nil {
		return nil, err
	}
	addr := func(i int) string { return "127.0.0.1:" + strconv.Itoa(ports[i]) }
	conf := filepath.Join(dir, "restate.toml")
	// Restate's defaults but for the addresses, the telemetry (this machine has no way
	// out) and the web UI.
	toml := fmt.Sprintf("base-dir = %q\nbind-address = %q\ndisable-telemetry = true\nlog-filter = \"warn\"\n\n[ingress]\nbind-address = %q\n\n[admin]\nbind-address = %q\ndisable-web-ui = true\n",
		filepath.Join(dir, "restate-data"), addr(0), addr(1), addr(2))
	if err := os.WriteFile(conf, []byte(toml), 0o600); err != nil {
		return nil, err
	}
	r := &Restate{ingress: "http://" + addr(1), admin: "http://" + addr(2),
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}}
	// restate-server makes an empty invoker-<id> directory per partition in TMPDIR and
	// leaves them: they go in dir, which the caller removes.
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, err
	}
	if r.server, err = startProcEnv(dir, "restate-server", []string{"TMPDIR=" + tmp}, restateServer(src), "--no-logo", "--config-file", conf); err != nil {
		return nil, err
	}
	// The SDK logs every invocation at info: at warn, as a service in production would.
	r.service, err = startProcEnv(dir, "restate-service", []string{"RESTATE_LOGGING=WARN"}, node, filepath.Join(src, "service.mjs"), strconv.Itoa(ports[3]))
	if err != nil {
		r.Close()
		return nil, err
	}
	if err := r.ready(ctx, "http://"+addr(3)); err != nil {
		r.Close()
		return nil, fmt.Errorf("restate: %w (logs: %s, %s)", err, r.server.logPath, r.service.logPath)
	}
	return r, nil
}

// ready waits for the server's admin API, registers the service, and waits for the
// ingress to route to it.
func (r *Restate) ready(ctx context.Context, service string) error {
	alive := func() error {
		if err := r.server.exited(); err != nil {
			return backoffStop{err}
		}
		if err := r.service.exited(); err != nil {
			return backoffStop{err}
		}
		return nil
	}
	err := poll(ctx, serverWait, func() error {
		if err := alive(); err != nil {
			return err
		}
		return r.post(ctx, r.admin+"/deployments", map[string]string{"uri": service}, nil)
	})
	if err != nil {
		return fmt.Errorf("register the service at %s: %w", service, err)
	}
	return poll(ctx, serverWait, func() error {
		if err := alive(); err != nil {
			return err
		}
		return r.post(ctx, r.ingress+"/session/_ready/begin", nil, nil)
	})
}

// Close stops the service and the server.
func (r *Restate) Close() {
	r.service.stop()
	r.server.stop()
}

// Begin marks the session's object begun.
func (r *Restate) Begin(ctx context.Context, session string) error {
	return r.post(ctx, r.object(session, "begin"), nil, nil)
}

// Ask calls the session's ask handler, which returns once the answer is in the
// object's state.
func (r *Restate) Ask(ctx context.Context, session string, m *protocol.Message, fallback json.RawMessage) (json.RawMessage, error) {
	req, err := newRequest(m, fallback)
	if err != nil {
		return nil, err
	}
	var answer json.RawMessage
	if err := r.post(ctx, r.object(session, "ask"), req, &answer); err != nil {
		return nil, err
	}
	return answer, nil
}

// End marks the session's object ended, with its outcome.
func (r *Restate) End(ctx context.Context, session string, failed error) error {
	outcome := "ok"
	if failed != nil {
		outcome = failed.Error()
	}
	return r.post(context.WithoutCancel(ctx), r.object(session, "end"), outcome, nil)
}

// Durable counts the answers in the state of the session objects whose keys begin
// with prefix, by the admin API's SQL.
func (r *Restate) Durable(ctx context.Context, prefix string) (int64, error) {
	var out struct {
		Rows []struct {
			N int64 `json:"n"`
		} `json:"rows"`
	}
	if strings.ContainsAny(prefix, "'%_\\") {
		return 0, fmt.Errorf("restate's count of answers: the prefix %q is not a plain name", prefix)
	}
	q := map[string]string{"query": "SELECT COUNT(*) AS n FROM state WHERE service_name = 'session' AND service_key LIKE '" + prefix + "%' AND key LIKE 'r%'"}
	if err := r.post(ctx, r.admin+"/query", q, &out); err != nil {
		return 0, err
	}
	if len(out.Rows) != 1 {
		return 0, fmt.Errorf("restate's count of answers: %d rows", len(out.Rows))
	}
	return out.Rows[0].N, nil
}

// Processes are the server and the service.
func (r *Restate) Processes() []int { return []int{r.server.pid(), r.service.pid()} }

func (r *Restate) object(session, handler string) string {
	return r.ingress + "/session/" + url.PathEscape(session) + "/" + handler
}

// post sends body as JSON to u and decodes the answer into out, if set.
func (r *Restate) post(ctx context.Context, u string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := r.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		line, _, _ := bufio.NewReader(bytes.NewReader(b)).ReadLine()
		return fmt.Errorf("POST %s: %s: %s", u, resp.Status, strings.TrimSpace(string(line)))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}
