package relay

import (
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }

// A notification's retry is dated by the relay's clock and jittered by its
// injected source: 2^attempt seconds scaled by 0.9 + 0.2 × jitter, capped.
func TestNotifyRetryUsesTheInjectedClockAndJitter(t *testing.T) {
	t.Parallel()
	now := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	for _, c := range []struct {
		attempt int
		jitter  float64
		want    time.Duration
	}{
		{1, 0, 1800 * time.Millisecond},
		{1, 0.5, 2 * time.Second},
		{3, 0.999, time.Duration(float64(8*time.Second) * (0.9 + 0.2*0.999))},
		{12, 0.5, time.Hour},
		{60, 0, 54 * time.Minute},
	} {
		w := &notifyWorker{relay: &Relay{cfg: Config{Clock: fixedClock(now),
			Notify: NotifyConfig{RetryMax: time.Hour, Jitter: func() float64 { return c.jitter }}}}}
		job := &river.Job[NotifyArgs]{JobRow: &rivertype.JobRow{Attempt: c.attempt}}
		if got := w.NextRetry(job).Sub(now); got != c.want {
			t.Errorf("attempt %d, jitter %v: retry in %v, want %v", c.attempt, c.jitter, got, c.want)
		}
	}
}
