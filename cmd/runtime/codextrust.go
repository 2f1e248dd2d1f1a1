package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// codexHookInfo is what `codex app-server`'s hooks/list says of one hook.
type codexHookInfo struct {
	Key         string `json:"key"`
	CurrentHash string `json:"currentHash"`
	TrustStatus string `json:"trustStatus"`
	SourcePath  string `json:"sourcePath"`
	Command     string `json:"command"`
}

// trustCodexHooks trusts agentmux's hooks of file in Codex the way Codex's own /hooks
// does: its app server lists the hooks with the hash of each as Codex computes it, and
// writes that hash back as trusted into Codex's config.toml. Nothing here computes a
// hash, so a change in how Codex does cannot make a wrong one. It returns how many
// hooks it trusted, after listing them again to see that Codex now runs them.
func trustCodexHooks(codexBin, file string, wait time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c, err := startCodexRPC(ctx, codexBin)
	if err != nil {
		return 0, err
	}
	defer c.close()
	if err := c.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "agentmux", "version": "1"}}, nil); err != nil {
		return 0, err
	}
	if err := c.notify("initialized"); err != nil {
		return 0, err
	}
	// A project's hooks.json (<dir>/.codex/hooks.json) is listed for that project.
	cwd, _ := os.Getwd()
	if dir := filepath.Dir(file); filepath.Base(dir) == ".codex" && dir != codexHome() {
		cwd = filepath.Dir(dir)
	}
	ours := func() ([]codexHookInfo, error) {
		var list struct {
			Data []struct {
				Hooks  []codexHookInfo `json:"hooks"`
				Errors []struct {
					Message string `json:"message"`
				} `json:"errors"`
			} `json:"data"`
		}
		if err := c.call("hooks/list", map[string]any{"cwds": []string{cwd}}, &list); err != nil {
			return nil, err
		}
		var found []codexHookInfo
		var problems []string
		for _, entry := range list.Data {
			for _, h := range entry.Hooks {
				if samePath(h.SourcePath, file) && strings.Contains(h.Command, "hook codex") {
					found = append(found, h)
				}
			}
			for _, e := range entry.Errors {
				problems = append(problems, e.Message)
			}
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("Codex lists none of agentmux's hooks in %s (%s); is %s a file Codex reads?", file, strings.Join(problems, "; "), file)
		}
		return found, nil
	}
	found, err := ours()
	if err != nil {
		return 0, err
	}
	state := map[string]any{}
	for _, h := range found {
		if h.TrustStatus != "trusted" && h.TrustStatus != "managed" {
			state[h.Key] = map[string]any{"trusted_hash": h.CurrentHash}
		}
	}
	if len(state) > 0 {
		edit := map[string]any{"keyPath": "hooks.state", "mergeStrategy": "upsert", "value": state}
		if err := c.call("config/batchWrite", map[string]any{"edits": []any{edit}, "reloadUserConfig": true}, nil); err != nil {
			return 0, err
		}
	}
	if found, err = ours(); err != nil {
		return 0, err
	}
	for _, h := range found {
		if h.TrustStatus != "trusted" && h.TrustStatus != "managed" {
			return 0, fmt.Errorf("Codex still lists hook %s as %s after agentmux trusted it", h.Key, h.TrustStatus)
		}
	}
	return len(state), nil
}

// samePath is whether two paths name one file, through symbolic links.
func samePath(a, b string) bool {
	if ra, err := filepath.EvalSymlinks(a); err == nil {
		a = ra
	}
	if rb, err := filepath.EvalSymlinks(b); err == nil {
		b = rb
	}
	return filepath.Clean(a) == filepath.Clean(b)
}

// codexRPC is a conversation with `codex app-server` over its stdio: one JSON-RPC
// message a line, without the "jsonrpc" member, as Codex speaks it.
type codexRPC struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr strings.Builder // read only once the process is waited for
	next   int
	waited bool
}

func startCodexRPC(ctx context.Context, bin string) (*codexRPC, error) {
	c := &codexRPC{cmd: exec.CommandContext(ctx, bin, "app-server")}
	c.cmd.Stderr = &c.stderr
	var err error
	if c.in, err = c.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s app-server: %w (name the binary with --codex)", bin, err)
	}
	c.out = bufio.NewScanner(out)
	c.out.Buffer(nil, 16<<20)
	return c, nil
}

func (c *codexRPC) send(m map[string]any) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = c.in.Write(append(b, '\n'))
	return err
}

func (c *codexRPC) notify(method string) error {
	return c.send(map[string]any{"method": method})
}

// call sends a request and reads until its response, into result; the server's
// notifications are passed over, and its requests refused.
func (c *codexRPC) call(method string, params, result any) error {
	c.next++
	id := c.next
	if err := c.send(map[string]any{"id": id, "method": method, "params": params}); err != nil {
		return fmt.Errorf("codex app-server: send %s: %w", method, err)
	}
	for c.out.Scan() {
		var m struct {
			ID     *int            `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(c.out.Bytes(), &m) != nil || m.ID == nil {
			continue
		}
		if m.Method != "" {
			_ = c.send(map[string]any{"id": *m.ID, "error": map[string]any{"code": -32601, "message": "agentmux answers no requests"}})
			continue
		}
		if *m.ID != id {
			continue
		}
		if m.Error != nil {
			return fmt.Errorf("codex app-server refused %s: %s", method, m.Error.Message)
		}
		if result == nil {
			return nil
		}
		return json.Unmarshal(m.Result, result)
	}
	err := c.out.Err()
	if err == nil {
		err = errors.New("it ended")
	}
	c.close()
	return fmt.Errorf("codex app-server, waiting for %s: %v %s", method, err, strings.TrimSpace(c.stderr.String()))
}

func (c *codexRPC) close() {
	if c.waited {
		return
	}
	c.waited = true
	c.in.Close()
	_ = c.cmd.Process.Kill()
	_ = c.cmd.Wait()
}
