// Package riverjobs is the leaf type by which a service contributes River
// jobs to the process's one River client (the relay's): its workers, its
// queues and its periodic jobs. The payouts check and a platform's account
// sweeps hand theirs to the relay this way, so they need not import it.
package riverjobs

import "github.com/riverqueue/river"

// Set is the River jobs one service works on the relay's client.
type Set struct {
	// Register adds their workers.
	Register func(*river.Workers) error
	// Queues are their queues, with each one's MaxWorkers.
	Queues map[string]int
	// Periodic are the periodic jobs River's leader inserts.
	Periodic []*river.PeriodicJob
}

// Merge returns a set that registers, queues and schedules everything in
// sets.
func Merge(sets ...Set) Set {
	out := Set{Queues: map[string]int{}}
	var regs []func(*river.Workers) error
	for _, s := range sets {
		if s.Register != nil {
			regs = append(regs, s.Register)
		}
		for q, n := range s.Queues {
			out.Queues[q] += n
		}
		out.Periodic = append(out.Periodic, s.Periodic...)
	}
	out.Register = func(w *river.Workers) error {
		for _, r := range regs {
			if err := r(w); err != nil {
				return err
			}
		}
		return nil
	}
	return out
}
