package relay

import (
	"fmt"

	"riverqueue.com/riverui"
)

// UIPrefix is where the service mounts River's dashboard.
const UIPrefix = "/riverui"

// UIHandler builds River's dashboard (riverui) on the relay's client, for
// the repair queue: jobs by state, dead letters, their errors, and a retry
// button. Mount it under prefix and Start it before serving.
func (r *Relay) UIHandler(prefix string) (*riverui.Handler, error) {
	h, err := riverui.NewHandler(&riverui.HandlerOpts{
		Endpoints: riverui.NewEndpoints(r.client, nil),
		Logger:    r.log,
		Prefix:    prefix,
	})
	if err != nil {
		return nil, fmt.Errorf("river dashboard: %w", err)
	}
	return h, nil
}
