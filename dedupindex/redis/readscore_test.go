package redis

import "testing"

// TestReadScore: claims read first at the start and while most find an
// original; a run of new digests switches them to the claim script, and a
// run of duplicates back.
func TestReadScore(t *testing.T) {
	var r readScore
	r.v.Store(readScoreMax / 2)
	if !r.first() {
		t.Fatal("a new index does not read first")
	}
	steps := func(dup, want bool) int {
		for i := 1; i <= 100; i++ {
			r.observe(dup)
			if r.first() == want {
				return i
			}
		}
		t.Fatalf("100 claims (duplicate %v) did not switch the path to read-first %v", dup, want)
		return 0
	}
	if n := steps(false, false); n > 2 {
		t.Errorf("%d new digests before the switch to the script, want at most 2 from the middle", n)
	}
	for range 100 {
		r.observe(false)
	}
	if n := steps(true, true); n < 5 || n > 20 {
		t.Errorf("%d duplicates to switch back to reading first, want 5 to 20", n)
	}
	// A mix of 3 duplicates in 4 reads first; 1 in 4 does not.
	for _, tc := range []struct {
		every int
		want  bool
	}{{4, true}, {4, false}} {
		for i := range 400 {
			r.observe((i%tc.every == 0) != tc.want)
		}
		if r.first() != tc.want {
			t.Errorf("mix with %v mostly: read first = %v", tc.want, r.first())
		}
	}
}
