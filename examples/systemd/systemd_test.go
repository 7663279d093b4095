package systemd_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayside-archive/wayside/internal/testenv"
)

// verify runs systemd-analyze verify on unit (written as wayside.service
// in a temporary directory, ExecStart's binary replaced by one that
// exists) and returns what it printed: it exits 0 even for unknown keys
// and bad values, which it reports on stderr.
func verify(t *testing.T, unit string) string {
	t.Helper()
	tool, err := exec.LookPath("systemd-analyze")
	if err != nil {
		testenv.MissingTool(t, "systemd-analyze not found (Debian package systemd)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	unit = strings.ReplaceAll(unit, "/usr/local/bin/wayside", self)
	p := filepath.Join(t.TempDir(), "wayside.service")
	if err := os.WriteFile(p, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, "verify", p).CombinedOutput()
	if err != nil {
		return string(out) + err.Error()
	}
	return string(out)
}

// TestUnitVerifies: examples/systemd/wayside.service passes
// systemd-analyze verify without a message, is Type=notify (wayside serve
// sends READY=1), reloads with SIGHUP and carries the hardening options;
// a misspelt key in a copy is reported (the check can fail).
func TestUnitVerifies(t *testing.T) {
	b, err := os.ReadFile("wayside.service")
	if err != nil {
		t.Fatal(err)
	}
	unit := string(b)
	if out := verify(t, unit); strings.TrimSpace(out) != "" {
		t.Errorf("systemd-analyze verify wayside.service:\n%s", out)
	}
	for _, want := range []string{"\nType=notify\n", "\nExecReload=/bin/kill -HUP $MAINPID\n", "\nNoNewPrivileges=yes\n",
		"\nProtectSystem=strict\n", "\nCapabilityBoundingSet=\n", "\nRuntimeDirectoryMode=0700\n", "\nSystemCallFilter=@system-service\n"} {
		if !strings.Contains(unit, want) {
			t.Errorf("wayside.service lacks %q", strings.TrimSpace(want))
		}
	}
	bad := strings.Replace(unit, "NoNewPrivileges=yes", "NoNewPrivilegez=yes", 1)
	if out := verify(t, bad); !strings.Contains(out, "NoNewPrivilegez") {
		t.Errorf("systemd-analyze verify did not report a misspelt key: %q", out)
	}
}
