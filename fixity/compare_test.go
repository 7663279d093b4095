package fixity

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/wayside-archive/wayside/fixity/merkle"
)

func TestCompareAccepted(t *testing.T) {
	a := synthManifest("https://a.example/web/1/http://x/", 1, "A")
	b := synthManifest("https://a.example/web/1/http://x/", 2, "B")
	if ch := CompareAccepted(nil, nil, a); ch.Class != ClassNone {
		t.Fatalf("first replay: %s", ch.Class)
	}
	if ch := CompareAccepted([]merkle.Hash{a.Root}, a, b); ch.Class != ClassRepresentation || len(ch.Resources) != 3 {
		t.Fatalf("new root: %+v", ch)
	}
	if ch := CompareAccepted([]merkle.Hash{a.Root, b.Root}, a, b); ch.Class != ClassAccepted || ch.Class.IsChange() {
		t.Fatalf("known state: %+v", ch)
	}
	tr := b.clone()
	tr.Context.Transient = true
	if ch := CompareAccepted([]merkle.Hash{a.Root}, a, tr); ch.Class != ClassTransient || ch.Class.IsChange() {
		t.Fatalf("transient: %+v", ch)
	}
	c := b.clone()
	c.Context.Browser = "Chrome/999"
	if ch := Compare(a, c); ch.LikeForLike || len(ch.Notes) == 0 {
		t.Fatalf("different browser not flagged: %+v", ch)
	}
}

func TestClassOrder(t *testing.T) {
	want := "set status urim header representation urim-representation timeout other"
	var got []string
	for _, c := range ChangeClasses() {
		got = append(got, string(c))
	}
	if strings.Join(got, " ") != want {
		t.Fatalf("class order %v", got)
	}
}

func TestReportFromRecords(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	recs := []Record{
		{Kind: KindAccept, URIM: "u1", Root: strings.Repeat("a", 64)},
		{Kind: KindReplay, Sweep: "s1", URIM: "u1", Archive: "A", Root: strings.Repeat("a", 64), Class: ClassNone, Time: t0},
		{Kind: KindReplay, Sweep: "s1", URIM: "u2", Archive: "A", Root: strings.Repeat("b", 64), Class: ClassNone, Time: t0},
		{Kind: KindReplay, Sweep: "s1", URIM: "u3", Archive: "B", Root: strings.Repeat("c", 64), Class: ClassNone, Time: t0},
		{Kind: KindReplay, Sweep: "s2", URIM: "u1", Archive: "A", Root: strings.Repeat("d", 64), Class: ClassSet, Time: t0,
			Changed: []ResourceChange{{Key: "http://x/<script>", Class: ClassSet, Detail: "added"}}},
		{Kind: KindReplay, Sweep: "s2", URIM: "u2", Archive: "A", Root: strings.Repeat("b", 64), Class: ClassNone, Time: t0},
		{Kind: KindReplay, Sweep: "s2", URIM: "u3", Archive: "B", Class: ClassTransient, Transient: true, Time: t0},
	}
	r := BuildReport(recs)
	if len(r.Sweeps) != 2 || len(r.Archives) != 2 {
		t.Fatalf("sweeps %v archives %+v", r.Sweeps, r.Archives)
	}
	a := r.Archives[0]
	if a.Archive != "A" || a.Cells[0].Share != 0 || a.Cells[1].Share != 0.5 || a.Cells[1].Changed != 1 {
		t.Fatalf("archive A cells %+v", a.Cells)
	}
	if b := r.Archives[1]; b.Cells[1].Share != -1 || b.Cells[1].Transient != 1 {
		t.Fatalf("archive B cells %+v", b.Cells)
	}
	if r.Mementos[0].URIM != "u1" || len(r.Mementos[0].Changes) != 1 || r.Mementos[0].DistinctRoots != 2 || r.Mementos[0].Accepted != 1 {
		t.Fatalf("drill-down %+v", r.Mementos[0])
	}
	var html bytes.Buffer
	if err := r.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	s := html.String()
	if !strings.Contains(s, "<svg") || strings.Contains(s, "<script>") || !strings.Contains(s, "&lt;script&gt;") {
		t.Fatalf("HTML report: heatmap missing or resource key not escaped:\n%s", s)
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil || !strings.Contains(js.String(), `"share": 0.5`) {
		t.Fatalf("JSON report: %v\n%s", err, js.String())
	}
}
