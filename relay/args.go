package relay

import (
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// Kind is the River job kind of a repair command's delivery.
const Kind = "payrecon_repair"

// Queue is the River queue repair commands are delivered on.
const Queue = "repairs"

// RepairArgs are the arguments of a delivery job: only the outbox id. The
// command itself stays in the outbox row, its one record.
type RepairArgs struct {
	OutboxID int64 `json:"outbox_id" river:"unique"`
}

// Kind implements river.JobArgs.
func (RepairArgs) Kind() string { return Kind }

// InsertOpts implements river.JobArgsWithInsertOpts: the repairs queue, and
// unique by outbox id in every job state, so a command is never enqueued
// twice while its job exists (dead letters included: an operator retries
// them with Relay.Retry instead).
func (RepairArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		Queue: Queue,
		UniqueOpts: river.UniqueOpts{
			ByArgs:  true,
			ByState: rivertype.JobStates(),
		},
	}
}
