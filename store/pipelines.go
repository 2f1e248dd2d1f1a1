package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentmux/agentmux/wire"
	"github.com/nats-io/nats.go/jetstream"
)

// pipelineTTL is how long a run's record stays after its last change.
const pipelineTTL = 7 * 24 * time.Hour

// ErrRunTaken is returned by PipelineStore.Put when another node changed the run
// since it was read: that node runs it now.
var ErrRunTaken = errors.New("the pipeline run was changed by another node")

// PipelineStore keeps pipeline runs in the bucket a node declared.
type PipelineStore struct {
	kv jetstream.KeyValue
}

// OpenPipelines opens the pipeline-run bucket.
func OpenPipelines(ctx context.Context, js jetstream.JetStream) (*PipelineStore, error) {
	kv, err := openBucket(ctx, js, wire.PipelineBucket, "pipeline")
	if err != nil {
		return nil, err
	}
	return &PipelineStore{kv: kv}, nil
}

// Get returns the run id and its revision; nil and 0 when there is none.
func (s *PipelineStore) Get(ctx context.Context, id string) (*wire.PipelineRun, uint64, error) {
	var run wire.PipelineRun
	rev, found, err := getJSON(ctx, s.kv, id, "pipeline run", &run)
	if err != nil || !found {
		return nil, 0, err
	}
	return &run, rev, nil
}

// Put stores run over revision rev (0: a new run) and returns the new revision. It
// fails with ErrRunTaken when the stored run is no longer at rev.
func (s *PipelineStore) Put(ctx context.Context, run *wire.PipelineRun, rev uint64) (uint64, error) {
	data, err := json.Marshal(run)
	if err != nil {
		return 0, fmt.Errorf("store: encode pipeline run %s: %w", run.ID, err)
	}
	var next uint64
	if rev == 0 {
		next, err = s.kv.Create(ctx, run.ID, data)
	} else {
		next, err = s.kv.Update(ctx, run.ID, data, rev)
	}
	var apiErr *jetstream.APIError
	if errors.Is(err, jetstream.ErrKeyExists) || errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
		return 0, ErrRunTaken
	}
	if err != nil {
		return 0, fmt.Errorf("store: write pipeline run %s: %w", run.ID, err)
	}
	return next, nil
}
