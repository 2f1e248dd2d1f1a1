package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/internal/retry"
	"github.com/agentmux/agentmux/wire"
)

const (
	// clusterReplicas is the default number of copies in a cluster: one server may
	// fail and a majority still holds every stream.
	clusterReplicas = 3
	// declareTimeout bounds the wait for a forming cluster's JetStream to take the
	// declarations.
	declareTimeout = 60 * time.Second
	declareRetry   = 250 * time.Millisecond // the first wait between tries, doubling
	declareMax     = 2 * time.Second        // up to this
	// declareAttempt bounds one round of declarations: a forming cluster leaves API
	// requests unanswered until its meta leader is elected.
	declareAttempt = 2 * time.Second
	// peerWait is how long a cluster may lack the servers for three replicas before the
	// declarations settle for one: while a cluster forms, its JetStream servers join the
	// meta group one by one, and on a loaded machine the meta leader has been seen to
	// take over 20 s to count three. Settling for one copy too soon leaves a whole
	// fleet's streams on one server until a node starts again; a cluster that really has
	// fewer servers waits this long once.
	peerWait = 45 * time.Second
)

// DuplicateWindow is how long the task and audit streams remember a message's id: a
// record published again within it (its acknowledgement was lost) is stored once, and
// a task submitted again under its id is not queued again.
const DuplicateWindow = 2 * time.Minute

// Retention bounds a stream: what is older than MaxAge, and the oldest beyond MaxBytes,
// the server removes. Zero is no bound.
type Retention struct {
	MaxAge   time.Duration
	MaxBytes int64
}

// Keep says what history the fleet keeps: the audit, and the sessions' events.
type Keep struct {
	Audit Retention
	// Events bounds the events' history; nil keeps none (and removes a history kept
	// before).
	Events *Retention
	// Checkpoints bounds the sessions' checkpoints ([checkpoints] max_age, max_bytes).
	Checkpoints Retention
}

// Declare creates or updates every stream and bucket agentmux uses, with replicas
// copies (0: chosen from the cluster) and the history keep says, retrying while a
// cluster is still forming, and returns how many copies each has. A node declares them
// as it starts; every other user of the bus only opens them.
func Declare(ctx context.Context, js jetstream.JetStream, replicas int, keep Keep, log *slog.Logger) (int, error) {
	d := declarer{js: js, log: log, audit: keep.Audit, events: keep.Events, checkpoints: keep.Checkpoints}
	ctx, cancel := context.WithTimeout(ctx, declareTimeout)
	defer cancel()
	auto := replicas == 0
	switch {
	case !auto:
	case js.Conn().ConnectedClusterName() == "":
		replicas = 1
	default:
		replicas = clusterReplicas
	}
	settleBy := time.Now().Add(peerWait)
	pace := retry.Backoff{Min: declareRetry, Max: declareMax}
	for waited := false; ; {
		attempt, cancelAttempt := context.WithTimeout(ctx, declareAttempt)
		err := d.all(attempt, replicas)
		cancelAttempt()
		few := err != nil && tooFewServers(err)
		if err != nil && ctx.Err() == nil && (transient(err) || few) && !waited {
			waited = true
			log.Info("waiting for JetStream to take the streams (a forming cluster elects its leader and gathers its servers)", "err", err)
		}
		switch {
		case err == nil:
			return replicas, nil
		case few && auto && replicas > 1 && time.Now().After(settleBy):
			log.Warn("the cluster has fewer than 3 JetStream servers; streams and buckets keep 1 copy: a server lost loses what it holds",
				"cluster", js.Conn().ConnectedClusterName(), "err", err)
			replicas = 1
			continue
		case !transient(err) && !few:
			var apiErr *jetstream.APIError
			if errors.As(err, &apiErr) && apiErr.ErrorCode == errReplicasNotSupported {
				return 0, fmt.Errorf("%w; this server is not in a cluster: set [nats] replicas = 1, or leave it out", err)
			}
			if outOfStore(err) {
				return 0, fmt.Errorf("%w; %s", err, storeHint)
			}
			return 0, err
		}
		if !retry.Sleep(ctx, pace.Next(0)) {
			if outOfStore(err) {
				return 0, fmt.Errorf("%w; %s", err, storeHint)
			}
			return 0, fmt.Errorf("%w (JetStream did not take the declarations within %v; is the cluster formed, with a majority of its servers up?)", err, declareTimeout)
		}
	}
}

// declarer declares streams and buckets on js.
type declarer struct {
	js          jetstream.JetStream
	log         *slog.Logger
	audit       Retention
	events      *Retention
	checkpoints Retention
}

// duplicatesWithin is a stream's duplicate window: DuplicateWindow, or its max_age when
// shorter (the server takes no window longer than what it keeps).
func duplicatesWithin(maxAge time.Duration) time.Duration {
	if maxAge > 0 && maxAge < DuplicateWindow {
		return maxAge
	}
	return DuplicateWindow
}

func (d declarer) all(ctx context.Context, replicas int) error {
	for _, cfg := range []jetstream.StreamConfig{{
		Name:        wire.TaskStream,
		Description: "agentmux tasks, one subject per host, pulled by capacity",
		Subjects:    []string{wire.TaskSubjects},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Duplicates:  DuplicateWindow,
		AllowMsgTTL: true, // submit --ttl: a task no node started by then is dropped
	}, {
		Name:        wire.AuditStream,
		Description: "agentmux audit trail: sessions, requests and who answered them",
		Subjects:    []string{wire.AuditSubjects},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Duplicates:  duplicatesWithin(d.audit.MaxAge),
		MaxAge:      d.audit.MaxAge,
		MaxBytes:    d.audit.MaxBytes,
	}, {
		Name:        wire.ExchangeStream,
		Description: "agentmux model calls' requests and answers ([gateway] record = \"full\"), kept as the audit is; operators alone read it",
		Subjects:    []string{wire.ExchangeSubjects},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Duplicates:  duplicatesWithin(d.audit.MaxAge),
		MaxAge:      d.audit.MaxAge,
		MaxBytes:    d.audit.MaxBytes,
	}} {
		cfg.Replicas = replicas
		if err := d.stream(ctx, cfg); err != nil {
			return err
		}
	}
	if err := d.eventHistory(ctx); err != nil {
		return err
	}
	for _, cfg := range []jetstream.KeyValueConfig{{
		Bucket:      wire.PendingBucket,
		Description: "agentmux requests waiting for a person (agentmux pending / respond)",
		TTL:         pendingTTL,
		Storage:     jetstream.FileStorage,
	}, {
		Bucket:      wire.GrantsBucket,
		Description: "agentmux answers people gave for a session or a host (the console lists and revokes them)",
		TTL:         grantsTTL,
		Storage:     jetstream.FileStorage,
	}, {
		Bucket:      wire.MemoryBucket,
		Description: "agentmux llm supervisors' exchanges with sessions (memory = \"session\"), for every member",
		// Bounded by its TTL and by what one entry holds (wire.MemoryTurns exchanges
		// of memoryMaxText a side), not by MaxBytes: the server reserves a bucket's
		// MaxBytes of disk when it is declared, and a node on a small disk (under
		// about 350 MB free) would not start.
		TTL:     memoryTTL,
		Storage: jetstream.FileStorage,
	}, {
		Bucket:      wire.PipelineBucket,
		Description: "agentmux pipeline runs: params and each stage's outcome, for resuming a run on another node",
		TTL:         pipelineTTL,
		Storage:     jetstream.FileStorage,
	}, {
		Bucket:      wire.AttachedBucket,
		Description: "agentmux attached sessions: the node that holds each open one (agentmux hook)",
		TTL:         attachedTTL,
		Storage:     jetstream.FileStorage,
	}, {
		Bucket:      wire.SpendBucket,
		Description: "agentmux spend: what each host's sessions cost each day, fleet-wide (agentmux spend)",
		TTL:         spendTTL,
		Storage:     jetstream.FileStorage,
	}, {
		Bucket:      wire.PromotionsBucket,
		Description: "agentmux shadow supervisors promoted fleet-wide to decide their routes (agentmux policy promote)",
		Storage:     jetstream.FileStorage,
	}, {
		Bucket:      wire.CheckpointIndexBucket,
		Description: "agentmux checkpoints: each session's, listed (agentmux checkpoints); their parts are in " + wire.CheckpointDataBucket + " or the object store " + wire.CheckpointBucket,
		TTL:         d.checkpoints.MaxAge,
		Storage:     jetstream.FileStorage,
	}, {
		Bucket:      wire.CheckpointDataBucket,
		Description: "agentmux checkpoints' parts that fit in one message: what brings a session back on another node; nodes alone read them",
		TTL:         d.checkpoints.MaxAge,
		MaxBytes:    d.checkpoints.MaxBytes,
		Storage:     jetstream.FileStorage,
	}, {
		Bucket:      wire.PausedBucket,
		Description: "agentmux paused sessions: why and until when each waits (agentmux sessions, pause, resume)",
		Storage:     jetstream.FileStorage,
	}, {
		Bucket:      wire.NodesBucket,
		Description: "agentmux nodes: each one's heartbeat, hosts and supervisors (agentmux nodes)",
		TTL:         nodesTTL,
		Storage:     jetstream.FileStorage,
	}} {
		cfg.Replicas = replicas
		if err := d.bucket(ctx, cfg); err != nil {
			return err
		}
	}
	return d.objects(ctx, jetstream.ObjectStoreConfig{
		Bucket:      wire.CheckpointBucket,
		Description: "agentmux checkpoints' parts: what brings a session back on another node; nodes alone read them",
		TTL:         d.checkpoints.MaxAge,
		MaxBytes:    d.checkpoints.MaxBytes,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
	})
}

// objects creates the object store, or updates it when it differs from cfg.
func (d declarer) objects(ctx context.Context, cfg jetstream.ObjectStoreConfig) error {
	if obs, err := d.js.ObjectStore(ctx, cfg.Bucket); err == nil {
		if st, err := obs.Status(ctx); err == nil {
			have := st.(*jetstream.ObjectBucketStatus).StreamInfo().Config
			if have.Description == cfg.Description && have.MaxAge == cfg.TTL && have.Replicas == cfg.Replicas && byteLimit(have.MaxBytes) == byteLimit(cfg.MaxBytes) {
				return nil
			}
		}
	}
	if _, err := d.js.CreateOrUpdateObjectStore(ctx, cfg); err != nil {
		return fmt.Errorf("store: declare object store %s with %d replicas: %w", cfg.Bucket, cfg.Replicas, err)
	}
	return nil
}

// stream creates the stream, or updates it when it differs from cfg, saying so
// when its replicas change. A stream already as declared (every node but the first
// declares it) is left alone: no update races the consumers nodes create meanwhile
// (nats-server 2.15 updates a file store's config unguarded against them).
func (d declarer) stream(ctx context.Context, cfg jetstream.StreamConfig) error {
	if s, err := d.js.Stream(ctx, cfg.Name); err == nil {
		have := s.CachedInfo().Config
		if have.Description == cfg.Description && slices.Equal(have.Subjects, cfg.Subjects) && have.Retention == cfg.Retention &&
			have.Storage == cfg.Storage && have.Duplicates == cfg.Duplicates && have.Replicas == cfg.Replicas && have.AllowMsgTTL == cfg.AllowMsgTTL &&
			have.MaxAge == cfg.MaxAge && byteLimit(have.MaxBytes) == byteLimit(cfg.MaxBytes) {
			return nil
		}
		if have.MaxAge != cfg.MaxAge || byteLimit(have.MaxBytes) != byteLimit(cfg.MaxBytes) {
			// Records beyond a new limit are removed for good: say so, with both.
			d.log.Warn("changing what a stream keeps ([audit]: max_age and max_bytes, events_max_age and events_max_bytes; 0 is no limit): what is beyond the new limits is removed",
				"stream", cfg.Name, "max_age_from", have.MaxAge, "max_age_to", cfg.MaxAge, "max_bytes_from", have.MaxBytes, "max_bytes_to", cfg.MaxBytes)
		}
		if have.Replicas != cfg.Replicas {
			d.log.Info("changing the replicas of a stream", "stream", cfg.Name, "from", have.Replicas, "to", cfg.Replicas)
		}
	}
	if _, err := d.js.CreateOrUpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("store: declare stream %s with %d replicas: %w", cfg.Name, cfg.Replicas, err)
	}
	return nil
}

// eventHistory keeps every event the nodes publish in a stream, as d.events bounds it,
// or removes that stream when no history is wanted. The server does not acknowledge
// what it stores there (NoAck): an event is published once, at most, as ever.
func (d declarer) eventHistory(ctx context.Context) error {
	if d.events == nil {
		err := d.js.DeleteStream(ctx, wire.EventStream)
		switch {
		case err == nil:
			d.log.Warn("[audit] keep_events = false: the history of events is removed", "stream", wire.EventStream)
		case !errors.Is(err, jetstream.ErrStreamNotFound):
			return fmt.Errorf("store: remove the history of events: %w", err)
		}
		return nil
	}
	return d.stream(ctx, jetstream.StreamConfig{
		Name:        wire.EventStream,
		Description: "agentmux sessions' events, as published: what agentmux logs reads",
		Subjects:    []string{wire.AllEvents},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		NoAck:       true,
		Duplicates:  duplicatesWithin(d.events.MaxAge),
		MaxAge:      d.events.MaxAge,
		MaxBytes:    d.events.MaxBytes,
		AllowDirect: true, // read in pages (scanDirect)
		// One copy, in a cluster too: every event is stored, and three copies would
		// triple what the servers write for a history people read while it is fresh. A
		// server lost loses its part of it; the audit, which keeps who decided what,
		// has every copy.
		Replicas: 1,
	})
}

// byteLimit is a stream's MaxBytes as the server keeps it: -1 for no limit, which a
// config says with 0.
func byteLimit(n int64) int64 {
	if n <= 0 {
		return -1
	}
	return n
}

// bucket creates the bucket, or updates it when it differs from cfg, as
// stream does.
func (d declarer) bucket(ctx context.Context, cfg jetstream.KeyValueConfig) error {
	if kv, err := d.js.KeyValue(ctx, cfg.Bucket); err == nil {
		if st, err := kv.Status(ctx); err == nil {
			have := st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config
			if have.Description == cfg.Description && have.MaxAge == cfg.TTL && have.Storage == cfg.Storage &&
				have.Replicas == cfg.Replicas && (cfg.MaxBytes == 0 || have.MaxBytes == cfg.MaxBytes) {
				return nil
			}
			if have.Replicas != cfg.Replicas {
				d.log.Info("changing the replicas of a bucket", "bucket", cfg.Bucket, "from", have.Replicas, "to", cfg.Replicas)
			}
		}
	}
	if _, err := d.js.CreateOrUpdateKeyValue(ctx, cfg); err != nil {
		return fmt.Errorf("store: declare bucket %s with %d replicas: %w", cfg.Bucket, cfg.Replicas, err)
	}
	return nil
}

// JetStream API error codes (nats-server's jetstream_errors_generated.go).
const (
	errNoPeers               jetstream.ErrorCode = 10005 // no suitable peers for placement
	errClusterNotAvailable   jetstream.ErrorCode = 10008 // JetStream system temporarily unavailable
	errInsufficientResources jetstream.ErrorCode = 10023
	errStorageExceeded       jetstream.ErrorCode = 10047 // insufficient storage resources available
	errReplicasNotSupported  jetstream.ErrorCode = 10074 // replicas > 1 not supported in non-clustered mode
)

// storeHint says what to do when a server's JetStream store cannot hold a declaration.
const storeHint = "the JetStream store cannot hold it: free disk where the servers store " +
	"(a server takes 3/4 of the free disk as its limit when it starts, then restart it), " +
	"or lower [audit] max_bytes and events_max_bytes"

// outOfStore reports a refusal for want of storage, a lone server's or every peer's.
func outOfStore(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == errStorageExceeded ||
		apiErr.ErrorCode == errNoPeers && strings.Contains(apiErr.Description, "insufficient storage")
}

// tooFewServers reports a refusal to place more replicas than there are servers.
func tooFewServers(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode {
	case errInsufficientResources, errNoPeers:
		return true
	}
	return false
}

// transient reports an error a forming cluster gives before its meta leader is elected.
func transient(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Code == 503 || apiErr.ErrorCode == errClusterNotAvailable
	}
	var legacyErr *nats.APIError // a bucket's watch starts its consumer through nats.go's older API
	if errors.As(err, &legacyErr) {
		return legacyErr.Code == 503 || legacyErr.ErrorCode == nats.ErrorCode(errClusterNotAvailable)
	}
	return errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount)
}
