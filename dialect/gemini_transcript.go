package dialect

import (
	"bufio"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// geminiACP is the Gemini CLI in ACP mode (gemini --acp): its ACP session is a chat it
// keeps as JSON lines under ~/.gemini/tmp/<project>/chats (GEMINI_CLI_HOME for ~), so
// a node carries it as it does Claude Code's transcript, and the CLI goes on in it with
// session/load.
type geminiACP struct{ *acp }

// Conversation is the current ACP session, once session/new or a load said it.
func (g geminiACP) Conversation() string { return g.conversation }

// Transcript is the chat file of session id of the CLI working in dir: the one it
// keeps (session-<time>-<the id's first 8>.jsonl, the id in its first line), or, for a
// session it does not have, where it finds one put back.
func (g geminiACP) Transcript(env []string, dir, id string) string {
	root := geminiRoot(env)
	chats := filepath.Join(root, "tmp", geminiProject(root, dir), "chats")
	short := id[:min(len(id), 8)]
	found, _ := filepath.Glob(filepath.Join(chats, "session-*-"+short+".jsonl"))
	for _, f := range found {
		if geminiChatOf(f) == id {
			return f
		}
	}
	return filepath.Join(chats, "session-agentmux-"+short+".jsonl")
}

// Place marks the project folder of a chat put back at path as dir's, as the CLI marks
// those it makes (.project_root): in a folder of no project's, the CLI finds the chat.
// The mark holds the working directory as the CLI is given it.
func (g geminiACP) Place(_ []string, dir, path string) error {
	mark := filepath.Join(filepath.Dir(filepath.Dir(path)), geminiProjectMark)
	owner, err := os.ReadFile(mark)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return os.WriteFile(mark, []byte(cmp.Or(g.cwd, dir)), 0o600)
	case err != nil:
		return fmt.Errorf("dialect: the Gemini CLI's project mark: %w", err)
	case !sameDir(strings.TrimSpace(string(owner)), dir):
		return fmt.Errorf("dialect: the Gemini CLI's project folder %s is %s's, not %s's", filepath.Dir(mark), owner, dir)
	}
	return nil
}

// geminiProjectMark is the file naming the working directory a project folder of the
// Gemini CLI is for.
const geminiProjectMark = ".project_root"

// geminiRoot is the Gemini CLI's folder: ~/.gemini, ~ being GEMINI_CLI_HOME or HOME.
func geminiRoot(env []string) string {
	home, ok := lookup(env, "GEMINI_CLI_HOME")
	if !ok {
		home, _ = lookup(env, "HOME")
	}
	return filepath.Join(home, ".gemini")
}

// geminiProject is the folder under root/tmp the CLI keeps dir's chats in, found as it
// finds it: dir's entry in root/projects.json when that folder is marked dir's or not
// marked; else the folder marked dir's; else, for a dir it never worked in,
// agentmux-<dir's digest>, which Place marks before the CLI looks.
func geminiProject(root, dir string) string {
	tmp := filepath.Join(root, "tmp")
	var registry struct {
		Projects map[string]string `json:"projects"`
	}
	if b, err := os.ReadFile(filepath.Join(root, "projects.json")); err == nil && json.Unmarshal(b, &registry) == nil {
		for path, slug := range registry.Projects {
			if sameDir(path, dir) && slug != "" && !strings.ContainsAny(slug, `/\`) && markedFor(filepath.Join(tmp, slug), dir, true) {
				return slug
			}
		}
	}
	if entries, err := os.ReadDir(tmp); err == nil {
		for _, e := range entries {
			if e.IsDir() && markedFor(filepath.Join(tmp, e.Name()), dir, false) {
				return e.Name()
			}
		}
	}
	sum := sha256.Sum256([]byte(dir))
	return "agentmux-" + hex.EncodeToString(sum[:6])
}

// markedFor reports whether project folder p is marked dir's, or, with unmarked, has
// no mark at all.
func markedFor(p, dir string, unmarked bool) bool {
	owner, err := os.ReadFile(filepath.Join(p, geminiProjectMark))
	if errors.Is(err, fs.ErrNotExist) {
		return unmarked
	}
	return err == nil && sameDir(strings.TrimSpace(string(owner)), dir)
}

// sameDir reports whether path names dir, a real path: the CLI records the path it was
// given, links and all.
func sameDir(path, dir string) bool {
	return filepath.Clean(path) == dir || RealDir(path) == dir
}

// RealDir is dir with its links resolved, as an agent's own working directory reads
// (the dir Transcripts take), or dir cleaned when it cannot be.
func RealDir(dir string) string {
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		return r
	}
	return filepath.Clean(dir)
}

// geminiChatOf is the session id in the first line of the chat file at path.
func geminiChatOf(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	line, _ := r.ReadSlice('\n')
	var meta struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(line, &meta)
	return meta.SessionID
}
