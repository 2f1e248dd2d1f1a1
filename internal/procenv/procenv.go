package procenv

import "os"

// Build returns the base variables (PATH, HOME, USER, LANG, LC_ALL, TZ, TMPDIR) and the
// inherit list, as far as they are set in the runtime's environment, then env.
func Build(inherit []string, env map[string]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, names := range [][]string{{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TZ", "TMPDIR"}, inherit} {
		for _, name := range names {
			if v, ok := os.LookupEnv(name); ok && !seen[name] {
				seen[name] = true
				out = append(out, name+"="+v)
			}
		}
	}
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}
