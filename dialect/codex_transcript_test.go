package dialect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/protocol"
)

// TestCodexResumesItsThread: a resumed session's thread is resumed, not started, and
// prompted with the note; a command's end is a safe point of its thread; the rollout
// is found where Codex keeps it, and named by its thread's time when put back.
func TestCodexResumesItsThread(t *testing.T) {
	d, _ := New(Codex, Options{Dir: "/repo"})
	const thread = "01a25214-1aa4-7a72-a761-063f8f176a9b" // a UUIDv7 of 2026-12-07 19:56:18 UTC
	d.Prompt(protocol.Prompt{Text: "fix it", Resume: &protocol.Resume{State: []byte(`{"conversation":"` + thread + `"}`), Note: "moved"}})
	_, next := acpDecode(t, d, `{"id":1,"result":{"userAgent":"codex"}}`)
	if !strings.Contains(next, `"method":"thread/resume"`) || !strings.Contains(next, `"threadId":"`+thread+`"`) || !strings.Contains(next, `"cwd":"/repo"`) {
		t.Fatalf("a resumed session's thread: %s", next)
	}
	_, turn := acpDecode(t, d, `{"id":2,"result":{"thread":{"id":"`+thread+`"},"model":"m"}}`)
	if !strings.Contains(turn, `"text":"moved"`) || strings.Contains(turn, "fix it") {
		t.Fatalf("the resumed thread's turn: %s", turn)
	}
	done, _ := acpDecode(t, d, `{"method":"item/completed","params":{"item":{"id":"i1","type":"commandExecution","status":"completed"}}}`)
	if len(done) != 2 || done[1].Type != protocol.TypeCheckpoint || string(done[1].State) != `{"conversation":"`+thread+`"}` {
		t.Fatalf("a command's end → %+v; want its progress, then a checkpoint of the thread", done)
	}

	home := t.TempDir()
	tr := d.(Transcripts)
	want := filepath.Join(home, "sessions", "2026", "12", "07", "rollout-2026-12-07T19-56-18-"+thread+".jsonl")
	if got := tr.Transcript([]string{"CODEX_HOME=" + home}, "/repo", thread); got != want {
		t.Errorf("a rollout put back goes to %s; want %s", got, want)
	}
	kept := filepath.Join(home, "sessions", "2026", "12", "08", "rollout-2026-12-08T01-00-00-"+thread+".jsonl")
	if err := os.MkdirAll(filepath.Dir(kept), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kept, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := tr.Transcript([]string{"HOME=/elsewhere", "CODEX_HOME=" + home}, "/repo", thread); got != kept {
		t.Errorf("the rollout Codex keeps is found at %s; want %s", got, kept)
	}
}
