//go:build linux

package sandbox

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Guard wraps ln, a listener of an agentmux process, so that it turns away the
// connections of the programs nodes of this machine sandbox (agents, command
// supervisors, tools), as their sandboxes refuse them the port. A sandbox cannot be told
// of a port that opens after its program started; the guard turns that program away at
// accept. A program is known by its cgroup, a node's (agentmux-<pid>-…), which it cannot
// leave; or, where its node could make none, by being sandboxed (no new privileges)
// below a process that announced a port (Announce), which a program that double-forks
// away from its node escapes. One that runs as another user, whose sockets this process
// cannot see, is not known, and let in.
func Guard(ln net.Listener) net.Listener { return &guard{Listener: ln} }

type guard struct{ net.Listener }

// Accept returns the next connection that is not a node's program's.
func (g *guard) Accept() (net.Conn, error) {
	for {
		c, err := g.Listener.Accept()
		if err != nil || !fromProgram(c) {
			return c, err
		}
		c.Close()
	}
}

// fromProgram reports whether c comes from a program a node of this machine started.
func fromProgram(c net.Conn) bool {
	local, ok1 := c.LocalAddr().(*net.TCPAddr)
	remote, ok2 := c.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 || !(remote.IP.IsLoopback() || remote.IP.Equal(local.IP)) {
		return false // from another machine
	}
	inode := peerSocket(remote, local.Port)
	if inode == "" {
		return false
	}
	pid := socketOwner(inode)
	return pid > 0 && (inNodeCgroup(pid) || belowANode(pid))
}

// belowANode reports whether process pid runs without new privileges (as every
// sandboxed program does) below a live process that announced a port: a node.
func belowANode(pid int) bool {
	if !noNewPrivs(pid) {
		return false
	}
	nodes := map[int]bool{}
	for _, l := range listeners(portsDir) {
		nodes[l.pid] = true
	}
	for p, hops := parent(pid), 0; p > 1 && hops < 64; p, hops = parent(p), hops+1 {
		if nodes[p] {
			return true
		}
	}
	return false
}

// parent is process pid's parent, from /proc/<pid>/stat; 0 if unknown.
func parent(pid int) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	// pid (comm) state ppid …: comm may hold spaces and parentheses, so read after the
	// last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// noNewPrivs reports whether process pid runs with no_new_privs set.
func noNewPrivs(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "NoNewPrivs:"); ok {
			return strings.TrimSpace(v) == "1"
		}
	}
	return false
}

// peerSocket is the inode of the socket at the other end of a connection to port:
// the one whose own address is remote, from /proc/net/tcp and tcp6.
func peerSocket(remote *net.TCPAddr, port int) string {
	forms := procAddrs(remote)
	want := fmt.Sprintf(":%04X", port)
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || !strings.HasSuffix(fields[2], want) {
				continue
			}
			for _, form := range forms {
				if fields[1] == form {
					f.Close()
					return fields[9]
				}
			}
		}
		f.Close()
	}
	return ""
}

// procAddrs are the ways /proc/net/tcp{,6} write a: an IPv4 address as a
// little-endian word, IPv6 (and IPv4-mapped) as four; the port in big-endian hex.
func procAddrs(a *net.TCPAddr) []string {
	port := fmt.Sprintf(":%04X", a.Port)
	v6 := func(ip net.IP) string {
		var b strings.Builder
		for i := 0; i < 16; i += 4 {
			fmt.Fprintf(&b, "%02X%02X%02X%02X", ip[i+3], ip[i+2], ip[i+1], ip[i])
		}
		return b.String() + port
	}
	if ip4 := a.IP.To4(); ip4 != nil {
		return []string{fmt.Sprintf("%02X%02X%02X%02X", ip4[3], ip4[2], ip4[1], ip4[0]) + port, v6(ip4.To16())}
	}
	return []string{v6(a.IP.To16())}
}

// socketOwner is a process holding socket inode, 0 if none this process may see.
func socketOwner(inode string) int {
	target := "socket:[" + inode + "]"
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fds, _ := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		for _, fd := range fds {
			if link, _ := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name())); link == target {
				return pid
			}
		}
	}
	return 0
}

// inNodeCgroup reports whether process pid is in a cgroup a node made for its
// programs (internal/shim: agentmux-<node's pid>-<random>/<program>).
func inNodeCgroup(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		_, path, _ := strings.Cut(line, "::")
		for _, part := range strings.Split(path, "/") {
			rest, ok := strings.CutPrefix(part, "agentmux-")
			digits, _, _ := strings.Cut(rest, "-")
			if _, err := strconv.Atoi(digits); ok && err == nil {
				return true
			}
		}
	}
	return false
}
