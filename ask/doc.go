// Package ask sends a node's requests to supervisors and collects their answers: the
// Asker sends each ask to its supervisor's queue group over one reply subscription,
// holds the members to the ask protocol (acknowledge, keep alive, release), asks
// again when a member falls silent or the connection comes back, and stops listening
// at the ask's deadline. The Directory says which live nodes serve each supervisor,
// so a re-ask can go to another member by name.
//
// An Asker's methods are safe for concurrent use; deliver callbacks run on the NATS
// subscription's goroutine and must not block.
package ask
