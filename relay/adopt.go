package relay

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// AdoptKind is the River job kind of the periodic pass that gives a
// delivery job to every outbox command that has none: commands written by
// another producer (the outbox is a contract others may write to), or
// while no relay was wired in. The same pass drops the commands held for
// review whose finding closed before an approval (DropHealed).
const AdoptKind = "payrecon_adopt_outbox"

// AdoptIntervalDefault is how often the service looks for such commands.
const AdoptIntervalDefault = time.Minute

// AdoptArgs are the (empty) arguments of the periodic adopt job.
type AdoptArgs struct{}

// Kind implements river.JobArgs.
func (AdoptArgs) Kind() string { return AdoptKind }

// InsertOpts implements river.JobArgsWithInsertOpts: on the repairs queue,
// and at most one waiting at a time.
func (AdoptArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		Queue:       Queue,
		MaxAttempts: 3,
		UniqueOpts: river.UniqueOpts{ByState: []rivertype.JobState{
			rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
			rivertype.JobStateRetryable, rivertype.JobStateScheduled,
		}},
	}
}

type adoptWorker struct {
	river.WorkerDefaults[AdoptArgs]
	relay *Relay
}

// Work runs DropHealed, then EnqueueUnprocessed.
func (w *adoptWorker) Work(ctx context.Context, _ *river.Job[AdoptArgs]) error {
	dropped, err := w.relay.DropHealed(ctx)
	if err != nil {
		return fmt.Errorf("drop held repairs whose finding closed: %w", err)
	}
	if len(dropped) > 0 {
		w.relay.log.Info("relay: dropped held repairs whose finding closed before an approval", slog.Int("count", len(dropped)))
	}
	n, err := w.relay.EnqueueUnprocessed(ctx)
	if err != nil {
		return fmt.Errorf("adopt outbox commands: %w", err)
	}
	if n > 0 {
		w.relay.log.Info("relay: queued outbox commands that had no delivery job", slog.Int("count", n))
	}
	return nil
}

// adoptJob is the periodic job River's leader inserts every interval (and
// once when it starts).
func adoptJob(interval time.Duration) *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(interval),
		func() (river.JobArgs, *river.InsertOpts) { return AdoptArgs{}, nil },
		&river.PeriodicJobOpts{ID: AdoptKind, RunOnStart: true})
}
