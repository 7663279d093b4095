package fixity

import (
	"sync"
	"time"

	"github.com/chromedp/cdproto/network"
)

// tracker follows the network events of one tab. Its onEvent runs inside
// chromedp's message loop, so it only records under a lock and never issues
// a CDP command.
type tracker struct {
	mu       sync.Mutex
	reqs     map[network.RequestID]*trackedReq
	order    []network.RequestID
	inflight int
	finished []network.RequestID // in the order requests finished or failed
	last     time.Time
	// now is the clock; replaced in nothing but kept injectable.
	now func() time.Time
}

type trackedReq struct {
	id       network.RequestID
	first    string // URL first requested
	url      string // current URL in the chain
	typ      string
	hops     []trackedHop
	req      *network.Request // the current request of the chain
	resp     *network.Response
	respTime time.Time // wall time resp arrived
	done     bool
	failed   string
	canceled bool
	blocked  bool
}

type trackedHop struct {
	url    string
	status int
	req    *network.Request
	resp   *network.Response // the redirect response
	time   time.Time
}

func newTracker() *tracker {
	return &tracker{reqs: map[network.RequestID]*trackedReq{}, now: time.Now, last: time.Now()}
}

func (t *tracker) onEvent(ev any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		t.last = t.now()
		if e.Request == nil {
			return
		}
		if r, ok := t.reqs[e.RequestID]; ok && e.RedirectResponse != nil {
			r.hops = append(r.hops, trackedHop{url: r.url, status: int(e.RedirectResponse.Status), req: r.req, resp: e.RedirectResponse, time: t.now()})
			r.url = e.Request.URL
			r.req = e.Request
			r.resp = nil
			return
		}
		if _, ok := t.reqs[e.RequestID]; ok {
			return
		}
		t.reqs[e.RequestID] = &trackedReq{id: e.RequestID, first: e.Request.URL, url: e.Request.URL, typ: string(e.Type), req: e.Request}
		t.order = append(t.order, e.RequestID)
		t.inflight++
	case *network.EventResponseReceived:
		t.last = t.now()
		if r, ok := t.reqs[e.RequestID]; ok {
			r.resp, r.respTime = e.Response, t.now()
		}
	case *network.EventLoadingFinished:
		t.last = t.now()
		if r, ok := t.reqs[e.RequestID]; ok && !r.done {
			r.done = true
			t.inflight--
			t.finished = append(t.finished, e.RequestID)
		}
	case *network.EventLoadingFailed:
		t.last = t.now()
		if r, ok := t.reqs[e.RequestID]; ok && !r.done {
			r.done = true
			r.failed = e.ErrorText
			r.canceled = e.Canceled
			r.blocked = e.BlockedReason != ""
			t.inflight--
			t.finished = append(t.finished, e.RequestID)
		}
	}
}

// state returns the number of requests in flight and the time of the last
// network event.
func (t *tracker) state() (int, time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.inflight, t.last
}

// snapshot returns copies of the tracked requests in request order.
func (t *tracker) snapshot() []trackedReq {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]trackedReq, 0, len(t.order))
	for _, id := range t.order {
		r := *t.reqs[id]
		r.hops = append([]trackedHop(nil), r.hops...)
		out = append(out, r)
	}
	return out
}

// chain returns the URLs of the request chain: the requested URL, each
// redirect target, ending with the current URL.
func (q *trackedReq) chain() []string {
	out := make([]string, 0, len(q.hops)+1)
	for _, h := range q.hops {
		out = append(out, h.url)
	}
	return append(out, q.url)
}

// markBlocked records that fixity's interception failed the request id
// (the browser does not always report a failed navigation request).
func (t *tracker) markBlocked(id network.RequestID, u string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last = t.now()
	r, ok := t.reqs[id]
	if !ok {
		r = &trackedReq{id: id, first: u, url: u, typ: "Other"}
		t.reqs[id] = r
		t.order = append(t.order, id)
		t.inflight++
	}
	if !r.done {
		r.done, r.blocked = true, true
		r.failed = "net::ERR_BLOCKED_BY_CLIENT"
		t.inflight--
		t.finished = append(t.finished, id)
	}
}

// finishedSince returns the request chains that finished after the first
// n finished ones, and the new count, so a poller sees each once.
func (t *tracker) finishedSince(n int) ([][]string, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out [][]string
	for _, id := range t.finished[n:] {
		out = append(out, t.reqs[id].chain())
	}
	return out, len(t.finished)
}
