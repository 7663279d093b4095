package zipfgen

import (
	"testing"
)

func TestGenerateDeterministicAndDisjoint(t *testing.T) {
	p1, a1 := Generate(Config{Keys: 20000, Seed: 7, Absent: 2000})
	p2, a2 := Generate(Config{Keys: 20000, Seed: 7, Absent: 2000})
	if len(p1) != 20000 || len(a1) != 2000 {
		t.Fatalf("got %d present, %d absent", len(p1), len(a1))
	}
	for i := range p1 {
		if p1[i] != p2[i] {
			t.Fatalf("not deterministic at %d: %v vs %v", i, p1[i], p2[i])
		}
		if i > 0 && p1[i-1].Key >= p1[i].Key {
			t.Fatalf("not sorted/unique at %d", i)
		}
	}
	set := map[string]bool{}
	hosts := map[string]int{}
	for _, e := range p1 {
		set[e.Key] = true
		h := e.Key[:len(e.Key)-len(e.Key[indexParen(e.Key):])]
		hosts[h]++
	}
	for i, k := range a1 {
		if set[k] || k != a2[i] {
			t.Fatalf("absent key %q is present or differs", k)
		}
	}
	// Skew: most hosts have a single key, the largest host has many.
	ones, biggest := 0, 0
	for _, n := range hosts {
		if n == 1 {
			ones++
		}
		biggest = max(biggest, n)
	}
	if ones < len(hosts)/3 || biggest < 200 {
		t.Fatalf("not skewed: %d hosts, %d with one key, biggest %d", len(hosts), ones, biggest)
	}
}

func indexParen(s string) int {
	for i := range s {
		if s[i] == ')' {
			return i
		}
	}
	return len(s)
}
