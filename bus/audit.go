package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// auditFetchWait is how long a read of the audit waits for a batch.
const auditFetchWait = 500 * time.Millisecond

// ReadAudit reads every audit record of one session, in the order they were stored:
// as many as the stream holds for the session when the read begins.
func ReadAudit(ctx context.Context, js jetstream.JetStream, session string) ([]*AuditRecord, error) {
	filter := AuditSubject("*", session)
	stream, err := js.Stream(ctx, AuditStream)
	if err != nil {
		return nil, fmt.Errorf("read the audit stream: %w", err)
	}
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return nil, fmt.Errorf("read the audit stream: %w", err)
	}
	want := 0
	for _, n := range info.State.Subjects {
		want += int(n)
	}
	if want == 0 {
		return nil, nil
	}
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
	if err != nil {
		return nil, fmt.Errorf("read the audit stream: %w", err)
	}
	out := make([]*AuditRecord, 0, want)
	for len(out) < want {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("read the audit stream: %d of the session's %d records before %w", len(out), want, ctx.Err())
		}
		batch, err := cons.Fetch(want-len(out), jetstream.FetchMaxWait(auditFetchWait))
		if err != nil {
			return nil, fmt.Errorf("read the audit stream: %w", err)
		}
		for m := range batch.Messages() {
			var r AuditRecord
			if err := json.Unmarshal(m.Data(), &r); err != nil {
				return nil, fmt.Errorf("audit record %s is not JSON: %w", m.Subject(), err)
			}
			out = append(out, &r)
		}
		if err := batch.Error(); err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout) {
			return nil, fmt.Errorf("read the audit stream: %w", err)
		}
	}
	return out, nil
}
