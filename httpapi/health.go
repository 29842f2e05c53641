package httpapi

import "net/http"

// handleHealthz answers 200 "ok" while the process is up: liveness only.
// Readiness (database reachable, migrations applied) is /readyz.
func handleHealthz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte("ok"))
	})
}
