package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// auditFetchWait is how long a read of the audit waits for a batch.
const auditFetchWait = 500 * time.Millisecond

// ReadAudit reads every audit record of one session, in the order they were stored.
func ReadAudit(ctx context.Context, js jetstream.JetStream, session string) ([]*AuditRecord, error) {
	cons, err := js.OrderedConsumer(ctx, AuditStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{AuditSubject("*", session)},
	})
	if err != nil {
		return nil, fmt.Errorf("read the audit stream: %w", err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the audit stream: %w", err)
	}
	want := int(info.NumPending)
	var out []*AuditRecord
	for len(out) < want {
		batch, err := cons.Fetch(want-len(out), jetstream.FetchMaxWait(auditFetchWait))
		if err != nil {
			return nil, fmt.Errorf("read the audit stream: %w", err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			var r AuditRecord
			if err := json.Unmarshal(m.Data(), &r); err != nil {
				return nil, fmt.Errorf("audit record %s is not JSON: %w", m.Subject(), err)
			}
			out = append(out, &r)
		}
		if err := batch.Error(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("read the audit stream: %w", err)
		}
		if n == 0 {
			break
		}
	}
	return out, nil
}
