package service_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/payrecon/payrecon/service"
)

// Slow and idle clients are disconnected on both listeners: a body sent a
// byte at a time, a header that never ends, and a keep-alive connection
// left idle. Each is a real TCP client; the server must close the
// connection within its bound (plus slack for a loaded machine), and never
// hold it for good.
func TestSlowClientsAreCutOff(t *testing.T) {
	t.Parallel()
	const bound = time.Second
	b := start(t, 0, func(c *service.Config) {
		c.Timeouts = service.Timeouts{ReadHeader: bound, Read: bound, PublicWrite: bound, AdminWrite: bound, Idle: bound}
	})
	select {
	case <-b.ready:
	case <-time.After(30 * time.Second):
		t.Fatal("the service did not become ready")
	}
	const slack = 15 * time.Second // generous: the machine is shared
	for _, addr := range []string{b.svc.Addr(), b.svc.AdminAddr()} {
		t.Run("slow body "+addr, func(t *testing.T) {
			t.Parallel()
			c := dial(t, addr)
			fmt.Fprintf(c, "POST /webhooks/stripe HTTP/1.1\r\nHost: x\r\nStripe-Signature: t=1,v1=00\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
			start := time.Now()
			closed := make(chan struct{})
			go func() { // the server's answer (if any) and then EOF
				_, _ = io.Copy(io.Discard, c)
				close(closed)
			}()
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-closed:
					if d := time.Since(start); d > bound+slack {
						t.Errorf("closed after %s, want within %s", d, bound+slack)
					}
					return
				case <-tick.C:
					if time.Since(start) > bound+slack {
						t.Fatalf("a body sent a byte every 100 ms still holds the connection after %s", time.Since(start))
					}
					_, _ = c.Write([]byte("x")) // an error here means closed: the reader sees it too
				}
			}
		})
		t.Run("slow header "+addr, func(t *testing.T) {
			t.Parallel()
			c := dial(t, addr)
			fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n")
			waitClosed(t, c, bound+slack, "a header that never ends")
		})
		t.Run("idle keep-alive "+addr, func(t *testing.T) {
			t.Parallel()
			c := dial(t, addr)
			fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("read /healthz: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "ok") || resp.Close {
				t.Fatalf("GET /healthz = %d %q (close %v), want 200 on a kept-alive connection", resp.StatusCode, body, resp.Close)
			}
			waitClosed(t, c, bound+slack, "an idle keep-alive connection")
		})
	}
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitClosed fails unless the server closes c within d (reads see EOF or a
// reset; anything it sends before, such as a 408, is read and dropped).
func waitClosed(t *testing.T, c net.Conn, d time.Duration, what string) {
	t.Helper()
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s still held after %s", what, time.Since(start))
	}
}
