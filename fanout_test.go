package wayside_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wayside-archive/wayside"
)

type recorder struct {
	mu   sync.Mutex
	uris []string
}

func (r *recorder) OnCapture(_ context.Context, c wayside.Capture) error {
	r.mu.Lock()
	r.uris = append(r.uris, c.URI)
	r.mu.Unlock()
	return nil
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.uris...)
}

func caps(n int) []wayside.Capture {
	out := make([]wayside.Capture, n)
	for i := range out {
		out[i] = wayside.Capture{URI: "http://example.com/" + strings.Repeat("a", i%7) + string(rune('A'+i%26)), Type: "response"}
	}
	return out
}

// Every consumer sees every capture, in the producer's order.
func TestFanoutDeliversInOrder(t *testing.T) {
	f := wayside.NewFanout()
	a, b := &recorder{}, &recorder{}
	f.Add("a", a)
	f.Add("b", b)
	in := caps(500)
	for _, c := range in {
		if err := f.OnCapture(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for name, r := range map[string]*recorder{"a": a, "b": b} {
		got := r.got()
		if len(got) != len(in) {
			t.Fatalf("%s got %d captures, want %d", name, len(got), len(in))
		}
		for i := range in {
			if got[i] != in[i].URI {
				t.Fatalf("%s capture %d = %s, want %s", name, i, got[i], in[i].URI)
			}
		}
	}
	if err := f.OnCapture(context.Background(), in[0]); !errors.Is(err, wayside.ErrFanoutClosed) {
		t.Fatalf("OnCapture after Close = %v, want ErrFanoutClosed", err)
	}
}

// blocker holds every capture until released.
type blocker struct {
	release chan struct{}
	recorder
	resyncs int
}

func (b *blocker) OnCapture(ctx context.Context, c wayside.Capture) error {
	<-b.release
	return b.recorder.OnCapture(ctx, c)
}

func (b *blocker) Resync(context.Context) error {
	b.resyncs++
	return nil
}

// A stuck consumer neither blocks the producer nor delays the others; it
// drops what does not fit in its queue, then resyncs once released.
func TestFanoutSlowConsumerNeverBlocksProducer(t *testing.T) {
	f := wayside.NewFanout(wayside.WithQueueSize(4))
	slow := &blocker{release: make(chan struct{})}
	fast := &recorder{}
	f.Add("slow", slow)
	f.Add("fast", fast)
	in := caps(100)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Each capture reaches the fast consumer while the slow one is stuck:
	// the producer is never held up, and neither is the other consumer.
	for i, c := range in {
		if err := f.OnCapture(ctx, c); err != nil {
			t.Fatal(err)
		}
		for len(fast.got()) < i+1 {
			if ctx.Err() != nil {
				t.Fatalf("fast consumer got %d of %d while the slow one is stuck", len(fast.got()), i+1)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	var st wayside.ConsumerStats
	for _, s := range f.Stats() {
		if s.Name == "slow" {
			st = s
		}
	}
	if !st.Behind || st.Dropped == 0 {
		t.Fatalf("slow consumer stats %+v: want behind with drops", st)
	}
	close(slow.release)
	if err := f.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if slow.resyncs != 1 {
		t.Fatalf("slow consumer resynced %d times, want 1", slow.resyncs)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("Close after resync: %v", err)
	}
}

type failing struct{ n int }

func (f *failing) OnCapture(_ context.Context, c wayside.Capture) error {
	f.n++
	if f.n%2 == 0 {
		panic("consumer bug")
	}
	return errors.New("disk full")
}

// A failing or panicking consumer is counted and reported by Close; the
// others are unaffected.
func TestFanoutReportsFailures(t *testing.T) {
	f := wayside.NewFanout()
	ok := &recorder{}
	f.Add("bad", &failing{})
	f.Add("ok", ok)
	for _, c := range caps(10) {
		f.OnCapture(context.Background(), c)
	}
	err := f.Close()
	if err == nil || !strings.Contains(err.Error(), "consumer bad failed on 10 of 10 captures") {
		t.Fatalf("Close = %v, want the bad consumer's failures", err)
	}
	if len(ok.got()) != 10 {
		t.Fatalf("healthy consumer got %d of 10", len(ok.got()))
	}
}

// A consumer that cannot catch up is reported at Close.
func TestFanoutReportsUnrecoveredDrops(t *testing.T) {
	f := wayside.NewFanout(wayside.WithQueueSize(1))
	rel := make(chan struct{})
	f.Add("stuck", wayside.SubscriberFunc(func(context.Context, wayside.Capture) error { <-rel; return nil }))
	for _, c := range caps(20) {
		f.OnCapture(context.Background(), c)
	}
	close(rel)
	err := f.Close()
	if err == nil || !strings.Contains(err.Error(), "consumer stuck missed") {
		t.Fatalf("Close = %v, want the missed captures reported", err)
	}
}

// A consumer that ignores its context and never returns cannot hold Close
// (and so a producer's shutdown) forever: it is abandoned after the drain
// timeout and a grace period, and Close names it.
func TestFanoutCloseAbandonsStuckConsumer(t *testing.T) {
	f := wayside.NewFanout(wayside.WithDrainTimeout(100 * time.Millisecond))
	stuck := make(chan struct{})
	defer close(stuck)
	entered := make(chan struct{}, 1)
	f.Add("stuck", wayside.SubscriberFunc(func(context.Context, wayside.Capture) error {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-stuck // ignores ctx
		return nil
	}))
	ok := &recorder{}
	f.Add("ok", ok)
	for _, c := range caps(10) {
		if err := f.OnCapture(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	<-entered
	done := make(chan error, 1)
	go func() { done <- f.Close() }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "consumer stuck") || !strings.Contains(err.Error(), "abandoned") {
			t.Fatalf("Close: %v, want the stuck consumer named", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Close waits for a consumer that ignores its context")
	}
	if got := ok.got(); len(got) != 10 {
		t.Errorf("the healthy consumer got %d of 10 captures", len(got))
	}
}
