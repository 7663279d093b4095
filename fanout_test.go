package wayside_test

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
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
	f := wayside.NewFanout(wayside.WithDrainTimeout(2 * time.Second))
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

// bytesWanter records the RecordBytes it gets, holding each capture until
// released.
type bytesWanter struct {
	release chan struct{}
	mu      sync.Mutex
	got     [][]byte
}

func (b *bytesWanter) WantsRecordBytes() bool { return true }

func (b *bytesWanter) OnCapture(_ context.Context, c wayside.Capture) error {
	<-b.release
	b.mu.Lock()
	b.got = append(b.got, c.RecordBytes)
	b.mu.Unlock()
	return nil
}

// bytesSeen records whether any capture reached it with RecordBytes.
type bytesSeen struct{ n, withBytes atomic.Int64 }

func (b *bytesSeen) OnCapture(_ context.Context, c wayside.Capture) error {
	b.n.Add(1)
	if c.RecordBytes != nil {
		b.withBytes.Add(1)
	}
	return nil
}

// Record bytes reach only the consumers that want them, and a consumer
// that falls behind holds at most its record budget of them: the captures
// queued beyond it arrive without bytes (their consumer reads the records
// back), and once the queue drains the bytes flow again.
func TestFanoutRecordBytesBudget(t *testing.T) {
	const budget, size = 4 << 10, 1 << 10
	plain := wayside.NewFanout()
	plain.Add("plain", &recorder{})
	if plain.WantsRecordBytes() || wayside.WantsRecordBytes(plain) {
		t.Fatal("a Fanout without a consumer that wants record bytes asks for them")
	}
	plain.Close()

	f := wayside.NewFanout(wayside.WithRecordBudget(budget))
	want := &bytesWanter{release: make(chan struct{})}
	other := &bytesSeen{}
	f.Add("wants", want)
	f.Add("other", other)
	if !wayside.WantsRecordBytes(f) {
		t.Fatal("the Fanout does not ask for record bytes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	send := func(i int) []byte {
		c := wayside.Capture{URI: "http://example.com/" + strconv.Itoa(i), Type: "response",
			RecordBytes: bytes.Repeat([]byte{byte(i)}, size)}
		if err := f.OnCapture(ctx, c); err != nil {
			t.Fatal(err)
		}
		return c.RecordBytes
	}
	var sent [][]byte
	for i := range 10 {
		sent = append(sent, send(i))
	}
	st := statsOf(t, f, "wants")
	if st.RecordBytesHeld != budget || st.RecordBytesStripped != 10-budget/size {
		t.Fatalf("while stuck: %d record bytes held, %d captures stripped; want %d and %d", st.RecordBytesHeld, st.RecordBytesStripped, budget, 10-budget/size)
	}
	close(want.release)
	if err := f.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if st := statsOf(t, f, "wants"); st.RecordBytesHeld != 0 {
		t.Fatalf("after draining, %d record bytes still held", st.RecordBytesHeld)
	}
	sent = append(sent, send(10)) // the budget is free again
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if len(want.got) != 11 {
		t.Fatalf("got %d captures, want 11", len(want.got))
	}
	for i, b := range want.got {
		kept := i < budget/size || i == 10
		switch {
		case kept && !bytes.Equal(b, sent[i]):
			t.Errorf("capture %d: record bytes %d long, want the %d sent", i, len(b), len(sent[i]))
		case !kept && b != nil:
			t.Errorf("capture %d arrived with %d record bytes beyond the budget", i, len(b))
		}
	}
	if other.n.Load() != 11 || other.withBytes.Load() != 0 {
		t.Fatalf("the consumer that does not want record bytes got %d captures, %d with bytes", other.n.Load(), other.withBytes.Load())
	}
}

func statsOf(t *testing.T, f *wayside.Fanout, name string) wayside.ConsumerStats {
	t.Helper()
	for _, s := range f.Stats() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no consumer %s", name)
	return wayside.ConsumerStats{}
}
