package demo

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// checkListeners proves the service's two listeners are split as the
// README says: metrics, the console and River's dashboard on the admin
// address, none of them on the public one. metric is a series /metrics
// must have.
func checkListeners(ctx context.Context, public, admin, metric string) error {
	tr := &http.Transport{}
	defer tr.CloseIdleConnections() // no keep-alive goroutine outlives the check
	client := &http.Client{Timeout: 10 * time.Second, Transport: tr}
	get := func(url string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return 0, "", err
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		return resp.StatusCode, string(b), err
	}
	for _, c := range []struct {
		url, contains string
		status        int
	}{
		{"http://" + admin + "/metrics", metric, http.StatusOK},
		{"http://" + admin + "/console/", "Reconciliation lag", http.StatusOK},
		{"http://" + admin + "/riverui/", "", http.StatusOK},
		{"http://" + public + "/metrics", "", http.StatusNotFound},
		{"http://" + public + "/riverui/", "", http.StatusNotFound},
		{"http://" + public + "/console/", "", http.StatusNotFound},
	} {
		status, body, err := get(c.url)
		if err != nil {
			return fmt.Errorf("check the service's listeners: GET %s: %w", c.url, err)
		}
		if status != c.status || !strings.Contains(body, c.contains) {
			return fmt.Errorf("check the service's listeners: GET %s = %d, want %d with %q", c.url, status, c.status, c.contains)
		}
	}
	return nil
}
