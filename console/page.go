package console

import (
	"html"
	"net/http"
	"strings"
)

// htmlPage builds the two pages the console renders on the server, sign-in and an
// action link's confirmation, without html/template. Executing a template reaches
// reflect's MethodByName, which turns off the linker's dead-code elimination for the
// whole binary: with it, the agentmux binary was 126 MB instead of 80, and an idle node
// held 84 MB resident instead of 63 (bench/RESULTS.md, "What tracing costs"). Data goes
// in only through text, which escapes it for an element's content or a quoted
// attribute; markup takes this package's constants only.
type htmlPage struct{ b strings.Builder }

// markup writes s as it is: markup of this package, never data.
func (p *htmlPage) markup(s string) { p.b.WriteString(s) }

// text writes s escaped, safe as an element's content or a quoted attribute's value.
func (p *htmlPage) text(s string) { p.b.WriteString(html.EscapeString(s)) }

// start writes the page's head and opens its form.
func (p *htmlPage) start(title, bodyClass, formAttrs string) {
	p.markup("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>")
	p.text(title)
	p.markup("</title>\n<link rel=\"stylesheet\" href=\"/app.css\">\n</head>\n<body class=\"" + bodyClass + "\">\n<form method=\"post\"" + formAttrs + ">\n  <h1>agentmux</h1>\n")
}

// para writes <p class="class" role="role">s</p> when s is not empty.
func (p *htmlPage) para(class, role, s string) {
	if s == "" {
		return
	}
	p.markup(`  <p class="` + class + `"`)
	if role != "" {
		p.markup(` role="` + role + `"`)
	}
	p.markup(">")
	p.text(s)
	p.markup("</p>\n")
}

// send ends the page and writes it with code.
func (p *htmlPage) send(w http.ResponseWriter, code int) {
	p.markup("</form>\n</body>\n</html>\n")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(p.b.String()))
}
