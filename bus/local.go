package bus

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// A bus without [[nats.users]] still lets no anonymous client in. The embedded server
// then knows two identities: the node's own (a password made at start and never written
// down) and the local operator's, an nkey whose seed it keeps in the state directory with
// mode 0600, where the CLI on that machine finds it (LocalCredentials). The seed outlives
// the node: a node started again on the same port takes it up again, so a CLI command
// that was following the node (watch, the console) reconnects to the new one.

// LocalUser is the name the bus knows the local operator by.
const LocalUser = "local"

// RoleLocal is the local operator's: an operator who may answer in any name, as
// `agentmux respond --as` does on a machine of one operator. No [[nats.users]] entry
// may have it.
const RoleLocal Role = "local"

// LocalCredentials is the file, in the state directory dir, holding the seed of the
// local operator of the embedded server listening on port.
func LocalCredentials(dir string, port int) string {
	return filepath.Join(dir, "operator-"+strconv.Itoa(port)+".nk")
}

// localOperator lets the local operator in to opts: with the seed a node on the same
// port left in dir, or a new one.
func localOperator(opts *server.Options, dir string) (nkeys.KeyPair, error) {
	kp, err := storedSeed(dir, opts.Port)
	if kp == nil && err == nil {
		kp, err = nkeys.CreateUser()
	}
	if err != nil {
		return nil, fmt.Errorf("bus: the local operator's key: %w", err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, fmt.Errorf("bus: make the local operator's key: %w", err)
	}
	perms := PermissionsFor(User{Name: LocalUser, Role: RoleLocal}).forServer()
	opts.Nkeys = append(opts.Nkeys, &server.NkeyUser{Nkey: pub, Permissions: perms})
	return kp, nil
}

// storedSeed is the local operator's key kept for the server on port, or nil when there
// is none (or the port is chosen at start).
func storedSeed(dir string, port int) (nkeys.KeyPair, error) {
	if port <= 0 {
		return nil, nil
	}
	path := LocalCredentials(dir, port)
	seed, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	kp, err := nkeys.FromSeed(bytes.TrimSpace(seed))
	if err != nil {
		return nil, fmt.Errorf("%s: %w; remove it, and a node makes a new one", path, err)
	}
	if pub, err := kp.PublicKey(); err != nil || !nkeys.IsValidPublicUserKey(pub) {
		return nil, fmt.Errorf("%s holds no user seed; remove it, and a node makes a new one", path)
	}
	return kp, nil
}

// writeLocalCredentials writes kp's seed to LocalCredentials(dir, port), readable by
// this user alone, and returns the file's path.
func writeLocalCredentials(kp nkeys.KeyPair, dir string, port int) (string, error) {
	seed, err := kp.Seed()
	if err != nil {
		return "", fmt.Errorf("bus: the local operator's seed: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("bus: state directory: %w; set AGENTMUX_STATE_DIR to a directory this user may write", err)
	}
	path := LocalCredentials(dir, port)
	tmp, err := os.CreateTemp(dir, ".operator-*")
	if err != nil {
		return "", fmt.Errorf("bus: write the local operator's credential: %w; set AGENTMUX_STATE_DIR to a directory this user may write", err)
	}
	_, err = tmp.Write(append(seed, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path) // CreateTemp made it 0600
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("bus: write the local operator's credential %s: %w", path, err)
	}
	return path, nil
}
