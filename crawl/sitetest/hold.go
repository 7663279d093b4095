package sitetest

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// holds are the answers a Server keeps waiting (Server.Hold).
type holds struct {
	mu      sync.Mutex
	byPath  map[string]*hold
	arrived map[string]bool // paths requested so far
	errs    []error
	closed  chan struct{} // closed by Server.Close (made by closedCh)
	made    sync.Once
	shut    sync.Once
}

// hold keeps the answers to requests for path waiting until a request
// for one of after has arrived (released is closed then).
type hold struct {
	path     string
	after    []string
	bound    time.Duration
	released chan struct{}
}

// Hold makes the server keep its answer to every request for path
// waiting until it has received a request for one of the paths after
// (then the answer goes out as usual; a request for path that comes
// later is answered at once). A test uses it to fix the order in which
// a crawler with several workers discovers URLs: the answer that would
// let one worker overtake another waits for a request only the other
// worker's progress can produce, whatever the machine's speed. bound
// only keeps a test from hanging when that request never comes: a held
// request then gets 503 Service Unavailable, and Err reports it, as it
// does a held request the client gave up on. Call Hold before the
// crawl starts.
func (s *Server) Hold(path string, after []string, bound time.Duration) {
	s.holds.mu.Lock()
	defer s.holds.mu.Unlock()
	if s.holds.byPath == nil {
		s.holds.byPath = map[string]*hold{}
	}
	h := &hold{path: path, after: append([]string(nil), after...), bound: bound, released: make(chan struct{})}
	for _, a := range after {
		if s.holds.arrived[a] {
			close(h.released)
			break
		}
	}
	s.holds.byPath[path] = h
}

// Err reports the held requests (Hold) that were not released: their
// bound was reached or their client gave up first. Nil when every held
// answer went out as planned.
func (s *Server) Err() error {
	s.holds.mu.Lock()
	defer s.holds.mu.Unlock()
	return errors.Join(s.holds.errs...)
}

// wait notes the request of r and releases the holds waiting for it;
// when r is held it waits until it is released and reports whether it
// may be answered (false: it was answered 503 or the client is gone).
func (hs *holds) wait(w http.ResponseWriter, r *http.Request) bool {
	hs.mu.Lock()
	if hs.arrived == nil {
		hs.arrived = map[string]bool{}
	}
	hs.arrived[r.URL.Path] = true
	for _, h := range hs.byPath {
		for _, a := range h.after {
			if a == r.URL.Path {
				select {
				case <-h.released:
				default:
					close(h.released)
				}
			}
		}
	}
	h := hs.byPath[r.URL.Path]
	hs.mu.Unlock()
	if h == nil {
		return true
	}
	start := time.Now()
	t := time.NewTimer(h.bound)
	defer t.Stop()
	var err error
	select {
	case <-h.released:
		return true
	case <-t.C:
		err = fmt.Errorf("sitetest: held the answer to %s for %s and no request for any of %v came", h.path, h.bound, h.after)
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	case <-r.Context().Done():
		err = fmt.Errorf("sitetest: the client gave up on %s after %s, held until a request for any of %v that had not come", h.path, time.Since(start).Round(time.Millisecond), h.after)
	case <-hs.closedCh():
		err = fmt.Errorf("sitetest: server closed while %s was held until a request for any of %v that had not come", h.path, h.after)
	}
	hs.mu.Lock()
	hs.errs = append(hs.errs, err)
	hs.mu.Unlock()
	return false
}

func (hs *holds) closedCh() <-chan struct{} {
	hs.made.Do(func() { hs.closed = make(chan struct{}) })
	return hs.closed
}

// close releases the held requests of a closing server (they get no answer).
func (hs *holds) close() {
	hs.closedCh()
	hs.shut.Do(func() { close(hs.closed) })
}
