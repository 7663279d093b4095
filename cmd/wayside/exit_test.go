package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// The exit conventions every subcommand shares: 0 success and -h, 1 failure,
// 2 usage (bad flag included) with one line and a hint, 130 interrupted.
func TestReportExitConventions(t *testing.T) {
	runArgs := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		err := run(context.Background(), args, &env{stdout: &out, stderr: &errb, stdin: strings.NewReader(""), getenv: func(string) string { return "" }})
		code := report(&errb, err, false)
		return code, out.String(), errb.String()
	}
	for _, tc := range []struct {
		args []string
		code int
		hint string
	}{
		{[]string{"cdxj", "--no-such-flag", "x"}, exitUsage, "Run 'wayside cdxj -h' for usage."},
		{[]string{"index", "import", "--batch", "abc", "x"}, exitUsage, "Run 'wayside index import -h' for usage."},
		{[]string{"nosuchcommand"}, exitUsage, "Run 'wayside -h' for usage."},
		{[]string{"cdxj"}, exitUsage, "Run 'wayside cdxj -h' for usage."},
	} {
		code, _, stderr := runArgs(tc.args...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d (stderr %q)", tc.args, code, tc.code, stderr)
		}
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "wayside: ") || lines[1] != tc.hint {
			t.Errorf("%v: stderr %q, want one error line and the hint %q", tc.args, stderr, tc.hint)
		}
	}
	code, out, stderr := runArgs("cdxj", "-h")
	if code != exitOK || !strings.Contains(out, "usage: wayside cdxj") || stderr != "" {
		t.Errorf("cdxj -h: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	code, out, _ = runArgs("version")
	if code != exitOK || !strings.HasPrefix(out, "wayside ") {
		t.Errorf("version: exit %d, %q", code, out)
	}
	var errb bytes.Buffer
	if code := report(&errb, nil, true); code != exitInterrupted || errb.String() != "wayside: interrupted\n" {
		t.Errorf("interrupted without error: exit %d, %q", code, errb.String())
	}
	errb.Reset()
	if code := report(&errb, errCleanStop, true); code != exitOK || errb.Len() != 0 {
		t.Errorf("daemon stopped by a signal: exit %d, %q", code, errb.String())
	}
	errb.Reset()
	if code := report(&errb, errors.New("disk full\nsecond line"), false); code != exitFailure || errb.String() != "wayside: disk full; second line\n" {
		t.Errorf("failure: exit %d, %q", code, errb.String())
	}
}
