package htmlpage

import (
	"fmt"
	"html"
	"net/http"
	"strings"
)

// Page builds a page rendered on the server (the console's sign-in, an action link's
// confirmation) without html/template. Executing a template reaches
// reflect's MethodByName, which turns off the linker's dead-code elimination for the
// whole binary: with it, the agentmux binary was 126 MB instead of 80, and an idle node
// held 84 MB resident instead of 63 (bench/RESULTS.md, "What tracing costs"). Data goes
// in only through text, which escapes it for an element's content or a quoted
// attribute; Markup takes the caller's constants only.
type Page struct{ b strings.Builder }

// Markup writes s as it is: the caller's constant markup, never data.
func (p *Page) Markup(s string) { p.b.WriteString(s) }

// Text writes s escaped, safe as an element's content or a quoted attribute's value,
// with each character that hides or reorders what a person reads shown as a mark.
func (p *Page) Text(s string) {
	shown, _ := Visible(s)
	p.b.WriteString(html.EscapeString(shown))
}

// Visible is s with each character that hides or reorders what a person reads
// (Trojan Source: bidirectional overrides, zero-width characters) or drives a terminal
// shown as a visible mark, "⟨U+202E⟩", as the page's script shows them (assets/app.js);
// and how many there were.
func Visible(s string) (string, int) {
	n := strings.IndexFunc(s, hidden)
	if n < 0 {
		return s, 0
	}
	var b strings.Builder
	count := 0
	for _, r := range s {
		if hidden(r) {
			fmt.Fprintf(&b, "⟨U+%04X⟩", r)
			count++
			continue
		}
		b.WriteRune(r)
	}
	return b.String(), count
}

// hidden reports whether r hides or reorders text, or is a control other than tab and
// newline.
func hidden(r rune) bool {
	switch {
	case r <= 0x08, r == 0x0B, r == 0x0C, r >= 0x0E && r <= 0x1F, r >= 0x7F && r <= 0x9F, r == 0x061C,
		r >= 0x200B && r <= 0x200F, r >= 0x202A && r <= 0x202E, r >= 0x2060 && r <= 0x2064, r >= 0x2066 && r <= 0x2069, r == 0xFEFF:
		return true
	}
	return false
}

// Start writes the page's head and opens its form.
func (p *Page) Start(title, bodyClass, formAttrs string) {
	p.Markup("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>")
	p.Text(title)
	p.Markup("</title>\n<link rel=\"stylesheet\" href=\"/app.css\">\n</head>\n<body class=\"" + bodyClass + "\">\n<form method=\"post\"" + formAttrs + ">\n  <h1>agentmux</h1>\n")
}

// Para writes <p class="class" role="role">s</p> when s is not empty.
func (p *Page) Para(class, role, s string) {
	if s == "" {
		return
	}
	p.Markup(`  <p class="` + class + `"`)
	if role != "" {
		p.Markup(` role="` + role + `"`)
	}
	p.Markup(">")
	p.Text(s)
	p.Markup("</p>\n")
}

// Send ends the page and writes it with code.
func (p *Page) Send(w http.ResponseWriter, code int) {
	p.Markup("</form>\n</body>\n</html>\n")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(p.b.String()))
}
