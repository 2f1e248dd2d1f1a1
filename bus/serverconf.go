package bus

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
)

// ServerUser is a user as an external NATS server's configuration names it: its
// password is the server's environment variable PasswordVar, never the secret itself.
type ServerUser struct {
	User
	PasswordVar string
}

// WriteAuthorization writes the nats-server configuration block that lets users in with
// the permissions of their roles, exactly as the embedded server grants them: what a
// server the fleet runs on needs in its configuration file.
func WriteAuthorization(w io.Writer, users []ServerUser) error {
	var b strings.Builder
	b.WriteString("authorization {\n  users = [\n")
	for _, u := range users {
		b.WriteString("    {\n")
		for _, kv := range credential(u) {
			fmt.Fprintf(&b, "      %s: %s\n", kv[0], kv[1])
		}
		p := PermissionsFor(u.User).forServer()
		b.WriteString("      permissions: {\n")
		for _, sp := range directions(p) {
			fmt.Fprintf(&b, "        %s: {\n", sp.key)
			confList(&b, "allow", sp.p.Allow)
			confList(&b, "deny", sp.p.Deny)
			b.WriteString("        }\n")
		}
		if r := p.Response; r != nil {
			fmt.Fprintf(&b, "        allow_responses: { max: %d, expires: %q }\n", r.MaxMsgs, r.Expires)
		}
		b.WriteString("      }\n    }\n")
	}
	b.WriteString("  ]\n}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteHelmAuthorization writes the same block as values for the official NATS Helm
// chart (config.merge.authorization), whose << … >> leaves a value unquoted so the
// server reads the variable.
func WriteHelmAuthorization(w io.Writer, users []ServerUser) error {
	var b strings.Builder
	b.WriteString("config:\n  merge:\n    authorization:\n      users:\n")
	for _, u := range users {
		for i, kv := range credential(u) {
			lead := "          "
			if i == 0 {
				lead = "        - "
			}
			value := kv[1]
			if strings.HasPrefix(value, "$") {
				value = strconv.Quote("<< " + value + " >>")
			}
			fmt.Fprintf(&b, "%s%s: %s\n", lead, kv[0], value)
		}
		p := PermissionsFor(u.User).forServer()
		b.WriteString("          permissions:\n")
		for _, sp := range directions(p) {
			fmt.Fprintf(&b, "            %s:\n", sp.key)
			yamlList(&b, "allow", sp.p.Allow)
			yamlList(&b, "deny", sp.p.Deny)
		}
		if r := p.Response; r != nil {
			fmt.Fprintf(&b, "            allow_responses:\n              max: %d\n              expires: %q\n", r.MaxMsgs, r.Expires)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// direction is one side of a user's subject permissions.
type direction struct {
	key string
	p   *server.SubjectPermission
}

// directions are the publish and subscribe sides of p, in that order.
func directions(p *server.Permissions) []direction {
	return []direction{{"publish", p.Publish}, {"subscribe", p.Subscribe}}
}

// credential is how the server recognises u: its name and password variable, or its
// nkey.
func credential(u ServerUser) [][2]string {
	if u.Nkey != "" {
		return [][2]string{{"nkey", strconv.Quote(u.Nkey)}}
	}
	return [][2]string{{"user", strconv.Quote(u.Name)}, {"password", "$" + u.PasswordVar}}
}

// confList writes key: [items] in the server's configuration language, a subject a line.
func confList(b *strings.Builder, key string, items []string) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(b, "          %s: [\n", key)
	for _, s := range items {
		fmt.Fprintf(b, "            %q\n", s)
	}
	b.WriteString("          ]\n")
}

// yamlList writes key: and items as a YAML sequence of double-quoted strings.
func yamlList(b *strings.Builder, key string, items []string) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(b, "              %s:\n", key)
	for _, s := range items {
		fmt.Fprintf(b, "                - %q\n", s)
	}
}
