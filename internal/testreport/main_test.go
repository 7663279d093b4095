package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

const stream = `{"Action":"start","Package":"example.com/a"}
{"Action":"run","Package":"example.com/a","Test":"TestOK"}
{"Action":"output","Package":"example.com/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"pass","Package":"example.com/a","Test":"TestOK","Elapsed":0.1}
{"Action":"run","Package":"example.com/a","Test":"TestSkip"}
{"Action":"output","Package":"example.com/a","Test":"TestSkip","Output":"    x_test.go:9: testenv: ../shared is absent\n"}
{"Action":"output","Package":"example.com/a","Test":"TestSkip","Output":"--- SKIP: TestSkip (0.00s)\n"}
{"Action":"skip","Package":"example.com/a","Test":"TestSkip"}
{"Action":"pass","Package":"example.com/a","Elapsed":0.5}
{"Action":"run","Package":"example.com/b","Test":"TestBad"}
{"Action":"run","Package":"example.com/b","Test":"TestBad/sub"}
{"Action":"output","Package":"example.com/b","Test":"TestBad/sub","Output":"    b_test.go:3: want 1, got 2\n"}
{"Action":"fail","Package":"example.com/b","Test":"TestBad/sub"}
{"Action":"fail","Package":"example.com/b","Test":"TestBad"}
{"Action":"fail","Package":"example.com/b","Elapsed":1.5}
not json: go: downloading x
`

func TestReportCountsAndFailures(t *testing.T) {
	var out bytes.Buffer
	r := &report{pkgs: map[string]*pkgState{}, out: &out, start: time.Now()}
	if err := r.read(strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	code := r.summary()
	s := out.String()
	for _, want := range []string{
		"ok   example.com/a 0.5s (2 tests, 1 skipped)",
		"FAIL example.com/b 1.5s (1 tests, 1 FAILED)",
		"want 1, got 2",
		"example.com/a TestSkip: x_test.go:9: testenv: ../shared is absent",
		"tests: 3 run, 1 passed, 1 failed, 1 skipped in 2 packages",
		"example.com/b: 1 failed of 1 (TestBad/sub, TestBad)",
		"not json: go: downloading x",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
	if code != 1 {
		t.Errorf("exit %d with a failed test, want 1", code)
	}
}

func TestReportNoTestsIsFailure(t *testing.T) {
	var out bytes.Buffer
	r := &report{pkgs: map[string]*pkgState{}, out: &out, start: time.Now()}
	r.read(strings.NewReader(`{"Action":"skip","Package":"example.com/c","Elapsed":0}` + "\n"))
	if code := r.summary(); code != 1 || !strings.Contains(out.String(), "no tests ran") {
		t.Errorf("exit %d, %s", code, out.String())
	}
}
