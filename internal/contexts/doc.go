// Package contexts keeps the CLI's named ways to reach a fleet, as kubectl and the nats
// CLI keep theirs: a context names a NATS server and who this user is to it (a .creds
// file, an nkey seed, or a user and the variable holding its password) and the CA that
// signs the server's certificate. The file is the user's own (0600), in their
// configuration directory; one context may be current.
//
//	s := contexts.Open(os.Getenv)
//	f, err := s.Load()
//	f.Put(contexts.Context{Name: "prod", Server: "nats://nats.prod:4222", Creds: "~/prod.creds"})
//	f.Current = "prod"
//	err = s.Save(f)
//
// A Store is a path; it holds no lock. Two commands saving at once: the later wins whole
// (the file is replaced by a rename, never left half written).
package contexts
