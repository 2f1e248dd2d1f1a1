package dialect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeminiTranscriptIsWhereTheCLIKeepsIt: the Gemini CLI's chat of a session is found
// in the project folder its registry gives the working directory, by the id in its
// first line (not another chat of the same first 8 characters); a chat put back for a
// directory the CLI never worked in goes to a folder of its own, which Place marks as
// the directory's so that the CLI finds it there, and a folder marked another's is
// refused. GEMINI_CLI_HOME is the CLI's home when set.
func TestGeminiTranscriptIsWhereTheCLIKeepsIt(t *testing.T) {
	home, repo := t.TempDir(), t.TempDir()
	root := filepath.Join(home, ".gemini")
	write := func(path, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const id = "5f0c2a9e-1111-4222-8333-944445555666"
	write(filepath.Join(root, "projects.json"), `{"projects":{"`+repo+`":"repo"}}`)
	write(filepath.Join(root, "tmp", "repo", geminiProjectMark), repo)
	other := filepath.Join(root, "tmp", "repo", "chats", "session-2026-12-08T01-00-5f0c2a9e.jsonl")
	mine := filepath.Join(root, "tmp", "repo", "chats", "session-2026-12-08T01-05-5f0c2a9e.jsonl")
	write(other, `{"sessionId":"5f0c2a9e-0000-4000-8000-000000000000"}`+"\n")
	write(mine, `{"sessionId":"`+id+`","projectHash":"x"}`+"\n"+`{"id":"m1","type":"user"}`+"\n")
	g := geminiACP{newACP(repo)}
	env := []string{"HOME=" + home}
	if got := g.Transcript(env, repo, id); got != mine {
		t.Errorf("the chat of %s in %s: %s; want %s", id, repo, got, mine)
	}

	work := t.TempDir() // a checkout the CLI never worked in
	g = geminiACP{newACP(work)}
	path := g.Transcript(env, work, id)
	if !strings.HasPrefix(path, filepath.Join(root, "tmp", "agentmux-")) || filepath.Base(path) != "session-agentmux-5f0c2a9e.jsonl" {
		t.Fatalf("a chat put back for %s goes to %s; want a folder of its own under %s", work, path, filepath.Join(root, "tmp"))
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := g.Place(env, work, path); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(path)), geminiProjectMark)); err != nil || string(b) != work {
		t.Errorf("the folder's mark: %q %v; want %s", b, err, work)
	}
	write(path, `{"sessionId":"`+id+`"}`+"\n")
	if got := g.Transcript(env, work, id); got != path {
		t.Errorf("the chat put back, looked for again: %s; want %s", got, path)
	}
	if err := (geminiACP{newACP(repo)}).Place(env, repo, path); err == nil || !strings.Contains(err.Error(), "is "+work+"'s") {
		t.Errorf("placing %s's chat in a folder marked %s's: %v; want it refused", repo, work, err)
	}

	elsewhere := t.TempDir()
	if got := g.Transcript(append(env, "GEMINI_CLI_HOME="+elsewhere), work, id); !strings.HasPrefix(got, filepath.Join(elsewhere, ".gemini", "tmp")) {
		t.Errorf("with GEMINI_CLI_HOME: %s; want it under %s", got, elsewhere)
	}
}
