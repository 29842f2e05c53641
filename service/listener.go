package service

import (
	"container/list"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// capListener bounds the connections an http.Server holds open at once
// (each is a file descriptor) without letting idle ones crowd out work. At
// the cap, a new connection is admitted by closing the oldest one that
// serves no request, for at least evictAfter: accepted without a whole
// request header yet (silent, or trickling one, as a slow-header attack
// does), or idle between keep-alive requests. evictAfter keeps a request
// whose header has arrived but not yet been read from being taken for
// silence. A connection whose header has been read is serving until its
// answer is written (its body, however slow, is cut off by Timeouts.Read),
// and is never closed to make room. Only when no connection is evictable
// does Accept wait, for one to end or to become evictable. So a flood of
// connections that send nothing costs at most max descriptors, and a
// webhook that arrives behind it is accepted at once (the flood's oldest
// connection makes room) and answered in milliseconds instead of waiting
// its turn in the kernel's queue.
//
// The server must report every state change (ConnState: use connState).
// max <= 0 counts without a cap (the admin listener). open is the count,
// exact: it falls as soon as a connection is closed, by whoever closes it.
type capListener struct {
	net.Listener
	max  int
	open prometheus.Gauge
	now  func() time.Time

	mu      sync.Mutex
	changed *sync.Cond // a connection closed or stopped serving
	count   int
	idle    list.List // *capConn not serving a request, oldest first
}

// evictAfter is how long a connection must have served no request before
// it may be closed to make room.
const evictAfter = 100 * time.Millisecond

func newCapListener(l net.Listener, max int, open prometheus.Gauge) *capListener {
	c := &capListener{Listener: l, max: max, open: open, now: time.Now}
	c.changed = sync.NewCond(&c.mu)
	return c
}

// capConn is a connection of a capListener.
type capConn struct {
	net.Conn
	l     *capListener
	idle  *list.Element // in l.idle while not serving a request
	since time.Time     // when it last stopped serving (or was accepted)
	gone  bool          // counted out: closed, evicted or hijacked
}

// Accept admits the next connection within the cap.
func (l *capListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	var victim *capConn
	l.mu.Lock()
	for l.max > 0 && l.count >= l.max {
		if e := l.idle.Front(); e != nil {
			oldest := e.Value.(*capConn)
			if wait := evictAfter - l.now().Sub(oldest.since); wait > 0 {
				// Not silent for long enough yet: look again then (or as
				// soon as something changes).
				t := time.AfterFunc(wait, func() { l.mu.Lock(); l.changed.Broadcast(); l.mu.Unlock() })
				l.changed.Wait()
				t.Stop()
				continue
			}
			victim = oldest
			l.forgetLocked(victim)
			break
		}
		l.changed.Wait() // every connection is serving a request
	}
	c := &capConn{Conn: nc, l: l, since: l.now()}
	c.idle = l.idle.PushBack(c)
	l.count++
	l.open.Inc()
	l.mu.Unlock()
	if victim != nil {
		_ = victim.Conn.Close() // the server's read fails and it lets the connection go
	}
	return c, nil
}

// forgetLocked counts c out (once).
func (l *capListener) forgetLocked(c *capConn) {
	if c.gone {
		return
	}
	c.gone = true
	if c.idle != nil {
		l.idle.Remove(c.idle)
		c.idle = nil
	}
	l.count--
	l.open.Dec()
	l.changed.Broadcast()
}

// Close closes the connection and counts it out.
func (c *capConn) Close() error {
	c.l.mu.Lock()
	c.l.forgetLocked(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// connState is the http.Server's ConnState hook: it tells the listener
// which connections serve a request (kept) and which do not (evictable).
func (l *capListener) connState(nc net.Conn, st http.ConnState) {
	c, ok := nc.(*capConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.gone {
		return
	}
	switch st {
	case http.StateActive:
		if c.idle != nil {
			l.idle.Remove(c.idle)
			c.idle = nil
		}
	case http.StateIdle:
		if c.idle == nil {
			c.since = l.now()
			c.idle = l.idle.PushBack(c)
			l.changed.Broadcast()
		}
	case http.StateHijacked, http.StateClosed:
		l.forgetLocked(c)
	}
}
